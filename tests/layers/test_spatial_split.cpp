// Samples split into slabs of rows (spatial parallelism), every member computed in one process.
#include <hpf/layers/avg_pool.hpp>
#include <hpf/layers/batch_norm.hpp>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/conv3d.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/global_avg_pool.hpp>
#include <hpf/layers/layer_split.hpp>
#include <hpf/layers/max_pool.hpp>
#include <hpf/layers/max_pool3d.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/model/spatial_split.hpp>
#include <hpf/tensor/random.hpp>
#include <hpf/zoo/blocks.hpp>

#include <support/gradient_check.hpp>
#include <support/network_pass.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace {

using SameConv = hpf::Sequential<hpf::Input<3, 6, 5>, hpf::Conv2D<4, 3, hpf::Pad<1>>>;
using WideConv = hpf::Sequential<hpf::Input<2, 8, 4>, hpf::Conv2D<3, 5, hpf::Pad<2>, hpf::NoBias>>;
using StridedConv = hpf::Sequential<hpf::Input<3, 8, 6>, hpf::Conv2D<4, 3, hpf::Stride<2>, hpf::Pad<1>>>;
using PointwiseStrided = hpf::Sequential<hpf::Input<3, 8, 4>, hpf::Conv2D<2, 1, hpf::Stride<2>>>;
using Cnn = hpf::Sequential<hpf::Input<2, 8, 6>, hpf::Conv2D<4, 3, hpf::Pad<1>>, hpf::BatchNorm, hpf::ReLU, hpf::MaxPool<2>,
                            hpf::Conv2D<5, 3, hpf::Pad<1>>, hpf::ReLU, hpf::AvgPool<2>, hpf::Flatten, hpf::Dense<3>,
                            hpf::SoftmaxCrossEntropy>;
using ResNet = hpf::Sequential<hpf::Input<2, 8, 8>, hpf::Conv2D<4, 3, hpf::Pad<1>, hpf::NoBias>, hpf::BatchNorm, hpf::ReLU,
                               hpf::zoo::BasicBlock<4>, hpf::zoo::BasicBlock<6, 2, false, hpf::zoo::Shortcut::projection>,
                               hpf::GlobalAvgPool, hpf::Dense<3>, hpf::SoftmaxCrossEntropy>;

using VolumeConv = hpf::Sequential<hpf::Input<2, 8, 3, 4>, hpf::Conv3D<3, 3, hpf::Pad<1>>>;
using StridedVolumeConv = hpf::Sequential<hpf::Input<2, 8, 4, 3>, hpf::Conv3D<2, 3, hpf::Stride<2>, hpf::Pad<1>, hpf::NoBias>>;
using VolumeCnn = hpf::Sequential<hpf::Input<1, 8, 4, 4>, hpf::Conv3D<3, 3, hpf::Pad<1>>, hpf::BatchNorm, hpf::ReLU,
                                  hpf::MaxPool3D<2>, hpf::Conv3D<4, 3, hpf::Pad<1>>, hpf::ReLU, hpf::Flatten, hpf::Dense<3>,
                                  hpf::SoftmaxCrossEntropy>;
static_assert(hpf::SpatialSplit<VolumeCnn, 2, 1>::input_shape::depth == 4 && hpf::SpatialSplit<VolumeCnn, 2, 1>::input_shape::height == 4);

// The slabs are the input's shape, split: a rank holding one slab holds 1/G of each activation
// up to the gather, and the whole one after it.
using Half = hpf::SpatialSplit<Cnn, 2, 1>;
static_assert(std::is_same_v<Half::input_shape, hpf::SpatialPart<hpf::Shape<2, 8, 6>, 2, 1>>);
static_assert(Half::input_shape::height == 4 && Half::input_shape::size == 48);
static_assert(std::is_same_v<Half::output_shape, Cnn::output_shape>);
static_assert(Half::cost.parameters == Cnn::cost.parameters);
static_assert(hpf::SpatialSplit<Cnn, 2>::cost.activations == Cnn::cost.activations);
static_assert(Half::cost.activations < Cnn::cost.activations);

/// The split model's analytic gradients against central differences, as tight as the unsplit
/// model's own (the differences' truncation error through ReLUs and max pooling).
template <class Model, std::size_t G>
void check_gradients() {
  INFO("spatial split over ", G);
  const auto draw = [](hpf::Rng& g) { return g.uniform(-1.0, 1.0); };
  const auto whole = hpf_test::gradient_check<Model>(4, 3, 24, 1e-5, draw);
  const auto split = hpf_test::gradient_check<hpf::SpatialSplit<Model, G>>(4, 3, 24, 1e-5, draw);
  CHECK(split.checked > 0);
  CHECK(split.worst_input_error < std::max(1e-6, 2 * whole.worst_input_error));
  CHECK(split.worst_parameter_error < std::max(1e-6, 2 * whole.worst_parameter_error));
}

using hpf_test::Pass;
using hpf_test::run_pass;
using hpf_test::worst_relative;

/// The split model agrees with the unsplit one within `tolerance` of the largest value.
template <class Model, std::size_t G, class T = double>
void check_agreement(std::size_t batch, double tolerance) {
  INFO("spatial split over ", G);
  const Pass whole = run_pass<Model, T>({}, batch);
  const Pass part = run_pass<hpf::SpatialSplit<Model, G>, T>({}, batch);
  CHECK(worst_relative(part.output, whole.output) < tolerance);
  CHECK(worst_relative(part.input_grad, whole.input_grad) < tolerance);
  CHECK(worst_relative(part.gradients, whole.gradients) < tolerance);
  CHECK(worst_relative(part.buffers, whole.buffers) < tolerance);
}

}  // namespace

TEST_CASE("Spatial split: finite-difference gradients of convolutions on slabs, halos included") {
  check_gradients<SameConv, 2>();
  check_gradients<SameConv, 3>();
  check_gradients<SameConv, 6>();  // one row per member
  check_gradients<WideConv, 2>();  // halos of two rows
  check_gradients<WideConv, 4>();  // halos as tall as a member's rows
  check_gradients<StridedConv, 2>();
  check_gradients<StridedConv, 4>();
  check_gradients<PointwiseStrided, 4>();  // reads only its own rows
}

TEST_CASE("Spatial split: finite-difference gradients of volumes split into slabs of planes") {
  check_gradients<VolumeConv, 2>();
  check_gradients<VolumeConv, 8>();  // one plane per member
  check_gradients<StridedVolumeConv, 2>();
  check_gradients<VolumeCnn, 2>();
}

TEST_CASE("Spatial split: finite-difference gradients through BatchNorm, pooling and the gathers") {
  check_gradients<Cnn, 2>();
  check_gradients<ResNet, 2>();
  check_gradients<ResNet, 4>();
}

TEST_CASE("Spatial split: the unsplit model's values up to the order of additions") {
  check_agreement<SameConv, 3>(3, 1e-14);
  check_agreement<WideConv, 4>(3, 1e-14);
  check_agreement<StridedConv, 2>(3, 1e-14);
  check_agreement<Cnn, 2>(5, 1e-13);
  check_agreement<ResNet, 4>(3, 1e-13);
  check_agreement<VolumeConv, 4>(3, 1e-14);
  check_agreement<VolumeCnn, 2>(3, 1e-13);
}

TEST_CASE("Spatial split in float: the unsplit model's values to float rounding") {
  // In float on the host each member's rows run oneDNN's convolution where hpf is built with it.
  check_agreement<Cnn, 2, float>(5, 2e-5);
  check_agreement<ResNet, 2, float>(3, 2e-5);
  check_agreement<VolumeCnn, 2, float>(3, 2e-5);
}

TEST_CASE("Spatial split: a network holding one slab needs its group's processes") {
  CHECK_THROWS_WITH_AS(hpf::Network<Half>(), doctest::Contains("holds 1 of 2 slabs of each sample"), std::invalid_argument);
  hpf::NetworkOptions filter;
  filter.split = hpf::LayerSplit::filter(2);
  const auto split_twice = [&] { hpf::Network<hpf::SpatialSplit<Cnn, 2>> net(filter); };
  CHECK_THROWS_WITH_AS(split_twice(), doctest::Contains("splits samples into slabs (spatial split over 2)"), std::invalid_argument);
  CHECK(hpf::LayerSplit::spatial(3).describe() == "spatial split over 3");
  CHECK(!hpf::LayerSplit::spatial(3).divides_layers());
  const hpf::Network<hpf::SpatialSplit<Cnn, 2>> net;
  CHECK(net.input_positions().all());
}

namespace {

/// Member 0 of 2 whose peer is absent (AbsentPeersLayerGroup's arithmetic), recording the order
/// of the group's calls and of the convolutions' interior rows.
class RecordingGroup final : public hpf::LayerGroup<double, Kokkos::DefaultExecutionSpace> {
 public:
  std::size_t size() const override { return 2; }
  std::size_t first_member() const override { return 0; }
  std::size_t local_members() const override { return 1; }
  void gather(double* data, std::span<const std::size_t> bounds) const override {
    calls.push_back("gather");
    absent_.gather(data, bounds);
  }
  void sum(const double* mine, std::size_t n, double* out) const override {
    calls.push_back("sum");
    absent_.sum(mine, n, out);
  }
  void gather_parts(const double* mine, std::size_t n, double* all) const override {
    calls.push_back("gather");
    absent_.gather_parts(mine, n, all);
  }
  void start_swap_edges(const double* a, std::size_t an, double* b, std::size_t bn, const double* c, std::size_t cn,
                        double* d, std::size_t dn) const override {
    calls.push_back("start swap");
    absent_.start_swap_edges(a, an, b, bn, c, cn, d, dn);
  }
  void finish_swap_edges() const override { calls.push_back("finish swap"); }

  static inline std::vector<std::string> calls;

 private:
  hpf::AbsentPeersLayerGroup<double, Kokkos::DefaultExecutionSpace> absent_{2};
};

/// The recording group's calls over one pass of Half, and how often a swap started and finished
/// with nothing between (blocking), with a convolution's interior rows between (interior), or
/// with the weight gradient's group sum between (overlapped).
struct SwapOrder {
  std::size_t blocking = 0, interior = 0, overlapped = 0, swaps = 0;
};
SwapOrder swap_order(bool interior_first) {
  const auto group = std::make_shared<RecordingGroup>();
  RecordingGroup::calls.clear();
  Kokkos::Tools::Experimental::set_push_region_callback([](const char* name) {
    if (std::string(name) == "hpf::SpatialConvolution::interior") RecordingGroup::calls.push_back("interior");
  });
  hpf::NetworkOptions options;
  options.split_group = group;
  options.interior_first = interior_first;
  hpf_test::run_pass<Half>(options, 3);
  Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
  SwapOrder order;
  const auto& c = RecordingGroup::calls;
  for (std::size_t i = 0; i + 1 < c.size(); ++i) {
    if (c[i] != "start swap") continue;
    ++order.swaps;
    if (c[i + 1] == "finish swap") ++order.blocking;
    if (i + 2 < c.size() && c[i + 1] == "interior" && c[i + 2] == "finish swap") ++order.interior;
    if (i + 2 < c.size() && c[i + 1] == "sum" && c[i + 2] == "finish swap") ++order.overlapped;
  }
  return order;
}
}  // namespace

TEST_CASE("Spatial split: halos travel while a convolution computes its weight gradient, and its interior rows if asked") {
  // Backward (the input gradient asked for, so both convolutions swap): the swap starts, the
  // weight gradient's group sum runs, and only then does the swap finish. Forward waits for its
  // halos, unless interior_first: then the first convolution's 4 rows per member have 2 interior
  // rows, computed between the swap's start and its finish; the second's 2 rows all read a halo,
  // so it waits first.
  const SwapOrder waits = swap_order(false), interior = swap_order(true);
  CHECK(waits.swaps == 4);
  CHECK(waits.blocking == 2);
  CHECK(waits.interior == 0);
  CHECK(waits.overlapped == 2);
  CHECK(interior.swaps == 4);
  CHECK(interior.blocking == 1);
  CHECK(interior.interior == 1);
  CHECK(interior.overlapped == 2);
}

TEST_CASE("Spatial split: interior rows first, the unsplit model's values up to the order of additions") {
  hpf::NetworkOptions options;
  options.interior_first = true;
  for (const bool in_float : {false, true}) {
    INFO(std::string(in_float ? "float" : "double"));
    const double tolerance = in_float ? 2e-5 : 1e-13;
    const auto compare = [&]<class Model, std::size_t G, class T>() {
      const Pass whole = run_pass<Model, T>({}, 3);
      const Pass part = run_pass<hpf::SpatialSplit<Model, G>, T>(options, 3);
      CHECK(worst_relative(part.output, whole.output) < tolerance);
      CHECK(worst_relative(part.input_grad, whole.input_grad) < tolerance);
      CHECK(worst_relative(part.gradients, whole.gradients) < tolerance);
    };
    if (in_float) {
      compare.template operator()<Cnn, 2, float>();
      compare.template operator()<VolumeCnn, 2, float>();
      compare.template operator()<StridedConv, 2, float>();
    } else {
      compare.template operator()<Cnn, 2, double>();
      compare.template operator()<VolumeCnn, 2, double>();
      compare.template operator()<StridedConv, 2, double>();
      compare.template operator()<SameConv, 3, double>();
    }
  }
}
