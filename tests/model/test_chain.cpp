#include <hpf/layers/batch_norm.hpp>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/conv3d.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/identity.hpp>
#include <hpf/layers/max_pool.hpp>
#include <hpf/layers/max_pool3d.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/model/chain.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/residual.hpp>
#include <hpf/model/sequential.hpp>

#include <support/fill.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {
std::vector<std::string> regions;
void record_region(const char* name) { regions.emplace_back(name); }

std::size_t count_of(const std::string& name) {
  return static_cast<std::size_t>(std::count_if(regions.begin(), regions.end(), [&](const std::string& r) {
    return r.find(name) != std::string::npos;
  }));
}
}  // namespace

TEST_CASE("Chain: no backward work below the first layer that learns unless the input gradient is wanted") {
  // Flatten and ReLU sit between the data and the first Dense, as in an MLP on images.
  using M = hpf::Sequential<hpf::Input<1, 3, 3>, hpf::Flatten, hpf::ReLU, hpf::Dense<4>, hpf::ReLU, hpf::Dense<2>>;
  hpf::Network<M, double> net;
  auto tape = net.make_tape(2);
  hpf_test::fill_uniform(net.input(tape, 2), 1);
  net.forward(tape, 2);
  hpf::Buffer<double, Kokkos::DefaultExecutionSpace> dy("dy", 2 * 2);
  hpf_test::fill_uniform(dy, 2);
  const auto output_grad = hpf::activation_view(dy, 2, 2, 1);

  auto backward = [&](hpf::Activation<double, Kokkos::DefaultExecutionSpace> input_grad) {
    net.zero_grad();
    regions.clear();
    Kokkos::Tools::Experimental::set_push_region_callback(record_region);
    net.backward(tape, 1.0, output_grad, input_grad);
    Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
    return hpf_test::to_host(net.gradients());
  };

  // No input gradient: two weight-gradient GEMMs and one input-gradient GEMM, nothing below.
  const auto without = backward({});
  CHECK(count_of("hpf::Flatten::backward") == 0);
  CHECK(count_of("hpf::ReLU::backward") == 1);  // only the one between the Dense layers
  CHECK(count_of("hpf::Dense::backward") == 2);
  CHECK(count_of("KokkosBlas::gemm") == 3);

  hpf::Buffer<double, Kokkos::DefaultExecutionSpace> dx("dx", 9 * 2);
  const auto with = backward(hpf::activation_view(dx, 1, 2, 9));
  CHECK(count_of("hpf::Flatten::backward") == 1);
  CHECK(count_of("hpf::ReLU::backward") == 2);
  CHECK(count_of("KokkosBlas::gemm") == 4);
  // Skipping changes no parameter gradient, and the input gradient is really computed.
  CHECK(without == with);
  const auto input_gradient = hpf_test::to_host(dx);
  CHECK(std::any_of(input_gradient.begin(), input_gradient.end(), [](double g) { return g != 0.0; }));
}

namespace {
/// Output, parameter gradients and input gradient of one training step of M on fixed data and
/// parameters (the parameters of `Reference`, copied flat: both models hold the same ones),
/// with the regions the step pushed.
struct StepResult {
  std::vector<double> output, gradients, input_gradient;
  std::vector<std::string> regions;
};
/// Sets net's flat parameters to `parameters`.
template <class Net>
void set_parameters(Net& net, const std::vector<double>& parameters) {
  REQUIRE(net.parameters().size() == parameters.size());
  auto host = Kokkos::create_mirror_view(net.parameters());
  using T = typename decltype(host)::value_type;
  for (std::size_t i = 0; i < parameters.size(); ++i) host(i) = static_cast<T>(parameters[i]);
  Kokkos::deep_copy(net.parameters(), host);
}
/// In T (double unless named; float runs the host's vector kernels where they exist).
template <class M, class T = double>
StepResult one_step(const std::vector<double>& parameters) {
  constexpr std::size_t n = 4;
  using Space = Kokkos::DefaultExecutionSpace;
  hpf::Network<M, T> net;
  set_parameters(net, parameters);
  auto tape = net.make_tape(n);
  hpf_test::fill_uniform(net.input(tape, n), 7);
  hpf::Buffer<T, Space> dy("dy", 3 * n), dx("dx", M::input_shape::size * n);
  hpf_test::fill_uniform(dy, 8);
  regions.clear();
  Kokkos::Tools::Experimental::set_push_region_callback(record_region);
  net.forward(tape, n);
  net.zero_grad();
  net.backward(tape, 1.0, hpf::activation_view(dy, 3, n, 1),
               hpf::activation_view(dx, M::input_shape::channels, n, M::input_shape::spatial));
  Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
  return {hpf_test::to_host(net.output(tape)), hpf_test::to_host(net.gradients()), hpf_test::to_host(dx), regions};
}
template <class M, class T = double>
std::vector<double> initial_parameters() {
  hpf::Network<M, T> net;
  return hpf_test::to_host(net.parameters());
}
}  // namespace

TEST_CASE("Chain: a ReLU after BatchNorm or Residual runs in their passes, with the same bits") {
  // The Identity in each reference keeps the ReLU from following the layer directly. BatchNorm's
  // outputs have mean 0 per channel, so the ReLU zeroes about half of them.
  SUBCASE("BatchNorm, ReLU: forward and backward") {
    using Fused = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::BatchNorm, hpf::ReLU, hpf::Flatten, hpf::Dense<3>>;
    using Apart = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::BatchNorm, hpf::Identity, hpf::ReLU, hpf::Flatten, hpf::Dense<3>>;
    const auto parameters = initial_parameters<Fused>();
    const StepResult fused = one_step<Fused>(parameters);
    CHECK(count_of("hpf::BatchNorm::forward_relu") == 1);
    CHECK(count_of("hpf::BatchNorm::backward_relu") == 1);
    CHECK(count_of("hpf::ReLU::") == 0);
    const StepResult apart = one_step<Apart>(parameters);
    CHECK(count_of("hpf::ReLU::forward") == 1);
    CHECK(count_of("hpf::ReLU::backward") == 1);
    CHECK(fused.output == apart.output);
    CHECK(fused.gradients == apart.gradients);
    CHECK(fused.input_gradient == apart.input_gradient);
  }
  SUBCASE("Residual, ReLU: forward, and backward through the body's last BatchNorm and the identity shortcut") {
    using Body = hpf::Chain<hpf::BatchNorm>;
    using Fused = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::Residual<Body>, hpf::ReLU, hpf::Flatten, hpf::Dense<3>>;
    using Apart =
        hpf::Sequential<hpf::Input<2, 3, 3>, hpf::Residual<Body>, hpf::Identity, hpf::ReLU, hpf::Flatten, hpf::Dense<3>>;
    const auto parameters = initial_parameters<Fused>();
    const StepResult fused = one_step<Fused>(parameters);
    CHECK(count_of("hpf::ReLU::") == 0);
    CHECK(count_of("hpf::BatchNorm::backward_relu") == 1);
    const StepResult apart = one_step<Apart>(parameters);
    CHECK(count_of("hpf::ReLU::forward") == 1);
    CHECK(count_of("hpf::ReLU::backward") == 1);
    CHECK(count_of("hpf::BatchNorm::backward_relu") == 0);
    CHECK(fused.output == apart.output);
    CHECK(fused.gradients == apart.gradients);
    CHECK(fused.input_gradient == apart.input_gradient);
  }
  SUBCASE("a ReLU that ends a block (the zoo's BasicBlock) runs in place on the block's output, fused") {
    using Body = hpf::Chain<hpf::BatchNorm, hpf::ReLU, hpf::BatchNorm>;
    using Fused = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::Chain<hpf::Residual<Body>, hpf::ReLU>, hpf::Flatten, hpf::Dense<3>>;
    using Apart =
        hpf::Sequential<hpf::Input<2, 3, 3>, hpf::Chain<hpf::Residual<Body>, hpf::Identity, hpf::ReLU>, hpf::Flatten, hpf::Dense<3>>;
    const auto parameters = initial_parameters<Fused>();
    const StepResult fused = one_step<Fused>(parameters);
    CHECK(count_of("hpf::ReLU::") == 0);
    CHECK(count_of("hpf::BatchNorm::backward_relu") == 2);  // the body's inner ReLU and the block's
    const StepResult apart = one_step<Apart>(parameters);
    CHECK(count_of("hpf::ReLU::forward") == 1);
    CHECK(count_of("hpf::ReLU::backward") == 1);
    CHECK(fused.output == apart.output);
    CHECK(fused.gradients == apart.gradients);
    CHECK(fused.input_gradient == apart.input_gradient);
    // The block keeps no buffer for the residual's output: the ReLU's output is the block's.
    using Block = hpf::bind_t<hpf::Chain<hpf::Residual<Body>, hpf::ReLU>, hpf::Input<2, 3, 3>::shape>;
    using Residual = hpf::bind_t<hpf::Residual<Body>, hpf::Input<2, 3, 3>::shape>;
    static_assert(Block::cost.activations == Residual::cost.activations);
    // Unfused (a look at every layer's output), the residual writes the block's output and the
    // ReLU runs over it: the same output.
    hpf::Network<Fused, double> net;
    set_parameters(net, parameters);
    auto tape = net.make_tape(4);
    hpf_test::fill_uniform(net.input(tape, 4), 7);
    CHECK(!net.first_non_finite_layer(tape, 4).has_value());
    CHECK(hpf_test::to_host(net.output(tape)) == fused.output);
  }
  SUBCASE("a block with a projection shortcut applies its ReLU forward only") {
    using Body = hpf::Chain<hpf::BatchNorm>;
    using Shortcut = hpf::Chain<hpf::BatchNorm, hpf::BatchNorm>;
    using Fused = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::Chain<hpf::Residual<Body, Shortcut>, hpf::ReLU>, hpf::Flatten,
                                  hpf::Dense<3>>;
    using Apart = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::Chain<hpf::Residual<Body, Shortcut>, hpf::Identity, hpf::ReLU>,
                                  hpf::Flatten, hpf::Dense<3>>;
    const auto parameters = initial_parameters<Fused>();
    const StepResult fused = one_step<Fused>(parameters);
    CHECK(count_of("hpf::ReLU::forward") == 0);
    CHECK(count_of("hpf::ReLU::backward") == 1);
    const StepResult apart = one_step<Apart>(parameters);
    CHECK(fused.output == apart.output);
    CHECK(fused.gradients == apart.gradients);
    CHECK(fused.input_gradient == apart.input_gradient);
  }
}

namespace {
/// One step in T of Fused and of Apart (Fused with an Identity that keeps its ReLU from the next
/// layer), from the same parameters: the same bits, and the pool (its regions named `pool`) ran in
/// place of the ReLU, forward and backward.
template <class Fused, class Apart, class T = double>
void same_step_without_relu(const std::string& pool) {
  const auto parameters = initial_parameters<Fused, T>();
  const StepResult fused = one_step<Fused, T>(parameters);
  CHECK(count_of("hpf::ReLU::") == 0);
  CHECK(count_of(pool + "::forward") == 1);
  CHECK(count_of(pool + "::backward") == 1);
  const StepResult apart = one_step<Apart, T>(parameters);
  CHECK(count_of("hpf::ReLU::forward") == 1);
  CHECK(count_of("hpf::ReLU::backward") == 1);
  CHECK(fused.output == apart.output);
  CHECK(fused.gradients == apart.gradients);
  CHECK(fused.input_gradient == apart.input_gradient);
  // The gradient reached the input through the pool and the ReLU (not all of it zero).
  CHECK(std::count(apart.input_gradient.begin(), apart.input_gradient.end(), 0.0) <
        static_cast<std::ptrdiff_t>(apart.input_gradient.size()));
}
}  // namespace

TEST_CASE("Chain: a max pool after a ReLU takes the ReLU into its own passes, with the same bits") {
  // Convolution outputs of either sign: the ReLU zeroes about half of them, whole windows too (ties
  // at zero, whose maximum is the first). In float, 2-wide windows of stride 2 run the vector rows.
  using Conv2DReLU = hpf::Sequential<hpf::Input<2, 6, 6>, hpf::Conv2D<3, 3, hpf::Pad<1>>, hpf::ReLU, hpf::MaxPool<2>,
                                     hpf::Flatten, hpf::Dense<3>>;
  using Conv2DApart = hpf::Sequential<hpf::Input<2, 6, 6>, hpf::Conv2D<3, 3, hpf::Pad<1>>, hpf::ReLU, hpf::Identity,
                                      hpf::MaxPool<2>, hpf::Flatten, hpf::Dense<3>>;
  using Conv3DReLU = hpf::Sequential<hpf::Input<2, 4, 4, 4>, hpf::Conv3D<3, 3, hpf::Pad<1>>, hpf::ReLU,
                                     hpf::MaxPool3D<2>, hpf::Flatten, hpf::Dense<3>>;
  using Conv3DApart = hpf::Sequential<hpf::Input<2, 4, 4, 4>, hpf::Conv3D<3, 3, hpf::Pad<1>>, hpf::ReLU, hpf::Identity,
                                      hpf::MaxPool3D<2>, hpf::Flatten, hpf::Dense<3>>;
  SUBCASE("Conv2D, ReLU, MaxPool<2>") { same_step_without_relu<Conv2DReLU, Conv2DApart>("hpf::MaxPool"); }
  SUBCASE("Conv2D, ReLU, MaxPool<2> in float") { same_step_without_relu<Conv2DReLU, Conv2DApart, float>("hpf::MaxPool"); }
  SUBCASE("overlapping windows: several windows add at one position") {
    using Fused = hpf::Sequential<hpf::Input<2, 6, 6>, hpf::Conv2D<3, 3, hpf::Pad<1>>, hpf::ReLU,
                                  hpf::MaxPool<3, hpf::Stride<1>>, hpf::Flatten, hpf::Dense<3>>;
    using Apart = hpf::Sequential<hpf::Input<2, 6, 6>, hpf::Conv2D<3, 3, hpf::Pad<1>>, hpf::ReLU, hpf::Identity,
                                  hpf::MaxPool<3, hpf::Stride<1>>, hpf::Flatten, hpf::Dense<3>>;
    same_step_without_relu<Fused, Apart>("hpf::MaxPool");
  }
  SUBCASE("padded windows") {
    using Fused = hpf::Sequential<hpf::Input<2, 6, 6>, hpf::Conv2D<3, 3, hpf::Pad<1>>, hpf::ReLU,
                                  hpf::MaxPool<3, hpf::Stride<2>, hpf::Pad<1>>, hpf::Flatten, hpf::Dense<3>>;
    using Apart = hpf::Sequential<hpf::Input<2, 6, 6>, hpf::Conv2D<3, 3, hpf::Pad<1>>, hpf::ReLU, hpf::Identity,
                                  hpf::MaxPool<3, hpf::Stride<2>, hpf::Pad<1>>, hpf::Flatten, hpf::Dense<3>>;
    same_step_without_relu<Fused, Apart>("hpf::MaxPool");
  }
  SUBCASE("Conv3D, ReLU, MaxPool3D<2>") { same_step_without_relu<Conv3DReLU, Conv3DApart>("hpf::MaxPool3D"); }
  SUBCASE("Conv3D, ReLU, MaxPool3D<2> in float") {
    same_step_without_relu<Conv3DReLU, Conv3DApart, float>("hpf::MaxPool3D");
  }
  SUBCASE("BatchNorm before the ReLU keeps taking it") {
    using M = hpf::Sequential<hpf::Input<2, 4, 4>, hpf::BatchNorm, hpf::ReLU, hpf::MaxPool<2>, hpf::Flatten, hpf::Dense<3>>;
    one_step<M>(initial_parameters<M>());
    CHECK(count_of("hpf::BatchNorm::forward_relu") == 1);
    CHECK(count_of("hpf::BatchNorm::backward_relu") == 1);
    CHECK(count_of("hpf::ReLU::") == 0);
  }
  SUBCASE("a first layer's ReLU runs itself (its output and input gradient are the chain's own)") {
    using M = hpf::Sequential<hpf::Input<2, 4, 4>, hpf::ReLU, hpf::MaxPool<2>, hpf::Flatten, hpf::Dense<3>>;
    one_step<M>(initial_parameters<M>());
    CHECK(count_of("hpf::ReLU::forward") == 1);
    CHECK(count_of("hpf::ReLU::backward") == 1);
  }
  SUBCASE("a ReLU with a buffer of its own (the layer before reads its output) runs forward") {
    // The second ReLU keeps its own output (the first reads its output in backward): the pool
    // takes its backward only, from that output.
    using Fused = hpf::Sequential<hpf::Input<2, 6, 6>, hpf::Conv2D<3, 3, hpf::Pad<1>>, hpf::ReLU, hpf::ReLU,
                                  hpf::MaxPool<2>, hpf::Flatten, hpf::Dense<3>>;
    using Apart = hpf::Sequential<hpf::Input<2, 6, 6>, hpf::Conv2D<3, 3, hpf::Pad<1>>, hpf::ReLU, hpf::ReLU,
                                  hpf::Identity, hpf::MaxPool<2>, hpf::Flatten, hpf::Dense<3>>;
    const auto parameters = initial_parameters<Fused>();
    const StepResult fused = one_step<Fused>(parameters);
    CHECK(count_of("hpf::ReLU::forward") == 2);
    CHECK(count_of("hpf::ReLU::backward") == 1);
    const StepResult apart = one_step<Apart>(parameters);
    CHECK(count_of("hpf::ReLU::backward") == 2);
    CHECK(fused.output == apart.output);
    CHECK(fused.gradients == apart.gradients);
    CHECK(fused.input_gradient == apart.input_gradient);
  }
}

TEST_CASE("Chain: a last layer that runs in place takes over its predecessor's buffer") {
  using In = hpf::Input<3>::shape;
  using Block = hpf::bind_t<hpf::Chain<hpf::Dense<4>, hpf::ReLU>, In>;
  static_assert(Block::cost.activations == 4);  // the ReLU's output, which the Dense writes
  // A ReLU after a ReLU: the first reads its output in backward, so the second keeps its own.
  using Twice = hpf::bind_t<hpf::Chain<hpf::Dense<4>, hpf::ReLU, hpf::ReLU>, In>;
  static_assert(Twice::cost.activations == 8);
  // The same training step as the layers side by side in one chain.
  using Nested = hpf::Sequential<hpf::Input<3>, hpf::Chain<hpf::Dense<4>, hpf::ReLU>, hpf::Dense<3>>;
  using Flat = hpf::Sequential<hpf::Input<3>, hpf::Dense<4>, hpf::ReLU, hpf::Dense<3>>;
  const auto parameters = initial_parameters<Nested>();
  const StepResult nested = one_step<Nested>(parameters);
  const StepResult flat = one_step<Flat>(parameters);
  CHECK(nested.output == flat.output);
  CHECK(nested.gradients == flat.gradients);
  CHECK(nested.input_gradient == flat.input_gradient);
}
