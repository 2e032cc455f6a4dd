// Dense and convolution layers split over a group (filter and channel parallelism), computed in
// one process.
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/conv3d.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/layers/gelu.hpp>
#include <hpf/layers/identity.hpp>
#include <hpf/model/dense_pair.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/tensor/random.hpp>

#include <support/gradient_check.hpp>
#include <support/network_pass.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Mlp = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::Flatten, hpf::Dense<8>, hpf::ReLU, hpf::Dense<5>,
                            hpf::SoftmaxCrossEntropy>;
using Single = hpf::Sequential<hpf::Input<13>, hpf::Dense<6>>;
using NoBiasLayer = hpf::Sequential<hpf::Input<7>, hpf::Dense<9, hpf::NoBias>>;
using PerPosition = hpf::Sequential<hpf::Input<4, 10>, hpf::Dense<6>>;

using PaddedConv = hpf::Sequential<hpf::Input<3, 5, 5>, hpf::Conv2D<4, 3, hpf::Pad<1>>>;
using StridedConv = hpf::Sequential<hpf::Input<5, 7, 6>, hpf::Conv2D<3, 3, hpf::Stride<2>, hpf::NoBias>>;
using PointwiseConv = hpf::Sequential<hpf::Input<4, 3, 3>, hpf::Conv2D<6, 1>>;
using Cnn = hpf::Sequential<hpf::Input<3, 6, 6>, hpf::Conv2D<4, 3>, hpf::ReLU, hpf::Conv2D<5, 3, hpf::Stride<2>, hpf::Pad<1>>,
                            hpf::Flatten, hpf::Dense<3>, hpf::SoftmaxCrossEntropy>;
using VolumeConv = hpf::Sequential<hpf::Input<3, 4, 5, 4>, hpf::Conv3D<4, 3, hpf::Pad<1>>>;

// Megatron's pair: the hidden layer's 8 features split the same way as the first layer's outputs
// and the second's inputs.
using LoneDense = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::Flatten, hpf::Dense<8>, hpf::ReLU, hpf::Dense<5>>;
using PairedDense = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::Flatten, hpf::DensePair<hpf::Dense<8>, hpf::ReLU, hpf::Dense<5>>>;
using PairMlp = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::Flatten, hpf::DensePair<hpf::Dense<8>, hpf::ReLU, hpf::Dense<5>>,
                                hpf::SoftmaxCrossEntropy>;
using PairPerPosition = hpf::Sequential<hpf::Input<4, 10>, hpf::DensePair<hpf::Dense<12>, hpf::GELU, hpf::Identity, hpf::Dense<6, hpf::NoBias>>>;

// The split facts the oracle prices (LayerCost): every Dense and convolution layer, nothing else.
static_assert(Cnn::cost.split_layers == 3 && Mlp::cost.split_layers == 2);
static_assert(PaddedConv::cost.split_macs == 4 * 27 * 25 && PaddedConv::cost.split_inputs == 75 &&
              PaddedConv::cost.split_outputs == 100 && PaddedConv::cost.split_weights == 4 * 27 + 4);
static_assert(VolumeConv::cost.split_macs == 4 * 81 * 80 && VolumeConv::cost.split_weights == 4 * 81 + 4);
// A pair moves the second layer's outputs forward and the first's input gradient backward, not
// each layer's inputs and outputs; the products and weights stay the layers'.
static_assert(PairedDense::cost.split_pairs == 1 && PairedDense::cost.split_pair_forward == 5 &&
              PairedDense::cost.split_pair_backward == 18 && PairedDense::cost.split_inputs == 0 &&
              PairedDense::cost.split_outputs == 0);
static_assert(PairedDense::cost.split_layers == 2 && PairedDense::cost.split_macs == LoneDense::cost.split_macs &&
              PairedDense::cost.split_weights == LoneDense::cost.split_weights &&
              PairedDense::cost.training_flops() == LoneDense::cost.training_flops());
static_assert(PairedDense::leaves == LoneDense::leaves);

hpf::NetworkOptions split_options(hpf::LayerSplit split) {
  hpf::NetworkOptions o;
  o.split = split;
  return o;
}

/// The split model's analytic gradients against central differences: within 1e-6, or within twice
/// the unsplit model's own discrepancy (the differences' truncation error through a ReLU network).
template <class Model>
void check_gradients(hpf::LayerSplit split) {
  INFO(split.describe());
  const auto check = [](const hpf::NetworkOptions& o) {
    return hpf_test::gradient_check<Model>(5, 3, 24, 1e-5, [](hpf::Rng& g) { return g.uniform(-1.0, 1.0); }, o);
  };
  const auto whole = check({}), r = check(split_options(split));
  CHECK(r.checked > 0);
  CHECK(r.worst_input_error < std::max(1e-6, 2 * whole.worst_input_error));
  CHECK(r.worst_parameter_error < std::max(1e-6, 2 * whole.worst_parameter_error));
}

using hpf_test::Pass;
using hpf_test::run_pass;
using hpf_test::worst_relative;

/// Every split of Model agrees with the unsplit Model (output, input and parameter gradients)
/// within `tolerance` of the largest value.
template <class Model, class T = double>
void check_agreement(std::initializer_list<hpf::LayerSplit> splits, std::size_t batch, double tolerance) {
  const Pass whole = run_pass<Model, T>({}, batch);
  for (const auto split : splits) {
    INFO(split.describe());
    const Pass part = run_pass<Model, T>(split_options(split), batch);
    CHECK(worst_relative(part.output, whole.output) < tolerance);
    CHECK(worst_relative(part.input_grad, whole.input_grad) < tolerance);
    CHECK(worst_relative(part.gradients, whole.gradients) < tolerance);
  }
}

}  // namespace

TEST_CASE("Dense split over a group: finite-difference gradients") {
  for (const std::size_t g : {2, 3, 5}) {
    for (const auto split : {hpf::LayerSplit::filter(g), hpf::LayerSplit::channel(g)}) {
      check_gradients<Single>(split);
      check_gradients<NoBiasLayer>(split);
      check_gradients<PerPosition>(split);
      check_gradients<Mlp>(split);
    }
  }
  SUBCASE("more members than outputs or inputs: some compute nothing") {
    check_gradients<Single>(hpf::LayerSplit::filter(8));
    check_gradients<hpf::Sequential<hpf::Input<3>, hpf::Dense<6>>>(hpf::LayerSplit::channel(5));
  }
}

TEST_CASE("Conv2D and Conv3D split over a group: finite-difference gradients") {
  // Filters 3 to 6 and channels 3 to 5 over 2, 3 and 5 members: some members own nothing.
  for (const std::size_t g : {2, 3, 5}) {
    for (const auto split : {hpf::LayerSplit::filter(g), hpf::LayerSplit::channel(g)}) {
      check_gradients<PaddedConv>(split);
      check_gradients<StridedConv>(split);
      check_gradients<PointwiseConv>(split);
      check_gradients<Cnn>(split);
      check_gradients<VolumeConv>(split);
    }
  }
}

TEST_CASE("Conv2D and Conv3D split over a group: the unsplit layer's values up to the order of additions") {
  const auto splits = {hpf::LayerSplit::filter(2), hpf::LayerSplit::filter(3), hpf::LayerSplit::channel(2),
                       hpf::LayerSplit::channel(3)};
  check_agreement<PaddedConv>(splits, 3, 1e-14);
  check_agreement<VolumeConv>(splits, 2, 1e-14);
}

TEST_CASE("Conv2D and Conv3D split over a group in float: the unsplit layer's values to float rounding") {
  // In float on the host, filter-split members run oneDNN's convolution of their output channels
  // where hpf is built with oneDNN; channel splits run the GEMMs.
  const auto splits = {hpf::LayerSplit::filter(2), hpf::LayerSplit::filter(3), hpf::LayerSplit::channel(2)};
  check_agreement<PaddedConv, float>(splits, 5, 1e-5);
  check_agreement<VolumeConv, float>(splits, 2, 1e-5);
}

TEST_CASE("Dense split over a group: the unsplit layer's values up to the order of additions") {
  check_agreement<PerPosition>({hpf::LayerSplit::filter(2), hpf::LayerSplit::filter(4), hpf::LayerSplit::channel(2),
                                hpf::LayerSplit::channel(3)},
                               3, 1e-14);
}

TEST_CASE("Dense split over a group: a filter split's outputs and weight gradients add no parts") {
  // Each output and weight gradient comes from one product over the whole input, as unsplit (the
  // BLAS may still block a narrower product differently); only backward's input gradient adds the
  // members' parts.
  const Pass whole = run_pass<Single>({}, 4);
  const Pass part = run_pass<Single>(split_options(hpf::LayerSplit::filter(3)), 4);
  CHECK(worst_relative(part.output, whole.output) < 1e-15);
  CHECK(worst_relative(part.gradients, whole.gradients) < 1e-15);
}

TEST_CASE("DensePair split over a group: finite-difference gradients, and the unsplit values up to the order of additions") {
  for (const std::size_t g : {2, 3, 5}) {
    for (const auto split : {hpf::LayerSplit::filter(g), hpf::LayerSplit::channel(g)}) {
      check_gradients<PairMlp>(split);
      check_gradients<PairPerPosition>(split);
    }
  }
  check_gradients<PairMlp>(hpf::LayerSplit::filter(12));  // more members than hidden features
  const auto splits = {hpf::LayerSplit::filter(2), hpf::LayerSplit::filter(3), hpf::LayerSplit::channel(4)};
  check_agreement<PairedDense>(splits, 3, 1e-14);
  check_agreement<PairPerPosition>(splits, 3, 1e-14);
  // Unsplit, a pair is the chain of its layers: the same parameters, names and values.
  using Chained = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::Flatten, hpf::Chain<hpf::Dense<8>, hpf::ReLU, hpf::Dense<5>>>;
  const Pass chain = run_pass<Chained>({}, 3), pair = run_pass<PairedDense>({}, 3);
  CHECK(pair.output == chain.output);
  CHECK(pair.gradients == chain.gradients);
  CHECK(hpf::Network<PairedDense>().tensors()[0].name == "1.0.weight");
}

namespace {
/// Member 0 of 2 whose peer is absent (AbsentPeersLayerGroup's arithmetic), recording the group's
/// collectives and how many elements each moves.
class CountingGroup final : public hpf::LayerGroup<double, Kokkos::DefaultExecutionSpace> {
 public:
  std::size_t size() const override { return 2; }
  std::size_t first_member() const override { return 0; }
  std::size_t local_members() const override { return 1; }
  void gather(double* data, std::span<const std::size_t> bounds) const override {
    calls.push_back("gather " + std::to_string(bounds.back()));
    absent_.gather(data, bounds);
  }
  void sum(const double* mine, std::size_t n, double* out) const override {
    calls.push_back("sum " + std::to_string(n));
    absent_.sum(mine, n, out);
  }
  void gather_parts(const double* mine, std::size_t n, double* all) const override {
    calls.push_back("gather " + std::to_string(2 * n));
    absent_.gather_parts(mine, n, all);
  }
  void start_swap_edges(const double*, std::size_t, double*, std::size_t, const double*, std::size_t, double*,
                        std::size_t) const override {}
  void finish_swap_edges() const override {}

  mutable std::vector<std::string> calls;

 private:
  hpf::AbsentPeersLayerGroup<double, Kokkos::DefaultExecutionSpace> absent_{2};
};

std::vector<std::string> collectives_of_pass(bool paired, hpf::LayerSplit split) {
  const auto group = std::make_shared<CountingGroup>();
  hpf::NetworkOptions options = split_options(split);
  options.split_group = group;
  if (paired) {
    run_pass<PairedDense>(options, 3);
  } else {
    run_pass<LoneDense>(options, 3);
  }
  return group->calls;
}
}  // namespace

TEST_CASE("DensePair split over a group: one sum of activations each way for both layers") {
  // Batch 3: the activations' collectives move 3 x features (hidden 8, output 5, input 18); the
  // weights' move 8 x 18, 8, 5 x 8 and 5. Lone layers under a filter split gather both outputs
  // forward and add both input gradients backward; under a channel split they add both outputs and
  // gather both input gradients.
  using calls = std::vector<std::string>;
  CHECK(collectives_of_pass(false, hpf::LayerSplit::filter(2)) ==
        calls{"gather 24", "gather 15", "gather 40", "gather 5", "sum 24", "gather 144", "gather 8", "sum 54"});
  CHECK(collectives_of_pass(false, hpf::LayerSplit::channel(2)) ==
        calls{"sum 24", "sum 15", "gather 40", "gather 24", "gather 144", "gather 54"});
  // A pair, either kind: forward adds the second layer's outputs; backward gathers the weight
  // gradients and adds the first layer's input gradient, nothing for the hidden features.
  const calls pair{"sum 15", "gather 40", "gather 144", "gather 8", "sum 54"};
  CHECK(collectives_of_pass(true, hpf::LayerSplit::filter(2)) == pair);
  CHECK(collectives_of_pass(true, hpf::LayerSplit::channel(2)) == pair);
}

TEST_CASE("a group whose peers are absent keeps its member's part and gathers zeros for the others") {
  // Stale values in the absent members' parts (denormals) slowed a calibrated member 30-fold.
  const hpf::AbsentPeersLayerGroup<double, Kokkos::DefaultExecutionSpace> absent(3);
  hpf::Buffer<double, Kokkos::DefaultExecutionSpace> data("data", 7);
  Kokkos::deep_copy(data, 4.9e-324);  // the smallest denormal
  const std::size_t bounds[] = {0, 2, 4, 7};
  absent.gather(data.data(), bounds);
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, data);
  CHECK(std::vector<double>(host.data(), host.data() + 7) == std::vector<double>{4.9e-324, 4.9e-324, 0, 0, 0, 0, 0});
  // Member 1 of 3: its part [2, 4) kept; its parts gathered in place land in their slot.
  const hpf::AbsentPeersLayerGroup<double, Kokkos::DefaultExecutionSpace> middle(3, 1);
  CHECK(middle.first_member() == 1);
  Kokkos::deep_copy(data, 4.9e-324);
  middle.gather(data.data(), bounds);
  Kokkos::deep_copy(host, data);
  CHECK(std::vector<double>(host.data(), host.data() + 7) == std::vector<double>{0, 0, 4.9e-324, 4.9e-324, 0, 0, 0});
  hpf::Buffer<double, Kokkos::DefaultExecutionSpace> all("all", 6);
  Kokkos::deep_copy(all, 7.0);
  middle.gather_parts(all.data(), 2, all.data());
  auto parts = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, all);
  CHECK(std::vector<double>(parts.data(), parts.data() + 6) == std::vector<double>{0, 0, 7, 7, 0, 0});
}

TEST_CASE("Dense split over a group: checked options") {
  CHECK(hpf::LayerSplit{}.describe() == "none");
  CHECK(hpf::LayerSplit::filter(1).describe() == "none");
  CHECK(hpf::LayerSplit::channel(4).describe() == "channel split over 4");
  CHECK(hpf::LayerSplit::channel(1).ranks() == 1);
  CHECK(hpf::LayerSplit::parse("filter:3") == hpf::LayerSplit::filter(3));
  CHECK(hpf::LayerSplit::parse("channel:2") == hpf::LayerSplit::channel(2));
  CHECK(hpf::LayerSplit::parse("spatial:4") == hpf::LayerSplit::spatial(4));
  for (const char* bad : {"rows:2", "filter:", "filter", "channel:two", "filter:-1"}) {
    INFO(bad);
    CHECK_THROWS_WITH_AS(hpf::LayerSplit::parse(bad), doctest::Contains("is filter:G, channel:G or spatial:G, not"),
                         std::invalid_argument);
  }
  CHECK_THROWS_WITH_AS(hpf::LayerSplit::parse("filter:0"), doctest::Contains("group has 0 members"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(hpf::Network<Single>(split_options(hpf::LayerSplit::filter(0))),
                       doctest::Contains("a layer split's group has 0 members"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(hpf::Network<Single>(split_options(hpf::LayerSplit::channel(65))),
                       doctest::Contains("takes 1 to 64"), std::invalid_argument);
  hpf::NetworkOptions wrong = split_options(hpf::LayerSplit::filter(2));
  wrong.split_group = std::make_shared<hpf::LocalLayerGroup<double, Kokkos::DefaultExecutionSpace>>(2);
  CHECK_THROWS_WITH_AS(hpf::Network<Single>{wrong}, doctest::Contains("another scalar type or space"), std::logic_error);
}
