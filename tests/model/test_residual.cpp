#include <hpf/layers/batch_norm.hpp>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/subsample_zero_pad.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/residual.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/zoo/blocks.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

TEST_CASE("Residual: y = body(x) + shortcut(x), names and costs") {
  using Block = hpf::Residual<hpf::Chain<hpf::Conv2D<2, 3, hpf::Pad<1>>>>;
  using M = hpf::Sequential<hpf::Input<2, 4, 4>, Block>;
  static_assert(std::is_same_v<M::output_shape, hpf::Shape<2, 4, 4>>);
  static_assert(M::leaves == 1);
  hpf::Network<M, double> net;
  CHECK(net.tensor("0.body.0.weight").dims == std::vector<std::size_t>{2, 2, 3, 3});
  auto tape = net.make_tape(2);
  const auto x = hpf_test::fill_uniform(net.input(tape, 2), 1);
  net.write(net.tensor("0.body.0.weight"), std::vector<double>(36, 0.0));
  net.write(net.tensor("0.body.0.bias"), {1.0, -1.0});
  net.forward(tape, 2);
  const auto y = hpf_test::to_host(net.output(tape));
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(y[i] == doctest::Approx(x[i] + (i < 32 ? 1.0 : -1.0)));
}

TEST_CASE("Residual: finite-difference gradients of whole residual blocks") {
  SUBCASE("CIFAR basic block, identity shortcut") {
    using M = hpf::Sequential<hpf::Input<3, 5, 5>, hpf::zoo::BasicBlock<3>>;
    auto r = hpf_test::gradient_check<M>(3);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
  SUBCASE("CIFAR basic block, option A (subsample + zero pad)") {
    using M = hpf::Sequential<hpf::Input<2, 6, 6>, hpf::zoo::BasicBlock<4, 2, false, hpf::zoo::Shortcut::zero_pad>>;
    static_assert(std::is_same_v<M::output_shape, hpf::Shape<4, 3, 3>>);
    auto r = hpf_test::gradient_check<M>(3);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
  SUBCASE("CIFAR basic block, option B (projection)") {
    using M = hpf::Sequential<hpf::Input<2, 6, 6>, hpf::zoo::BasicBlock<4, 2, false, hpf::zoo::Shortcut::projection>>;
    auto r = hpf_test::gradient_check<M>(3);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
  SUBCASE("pre-activation bottleneck with projection") {
    using M = hpf::Sequential<hpf::Input<3, 5, 5>, hpf::zoo::PreActBottleneckProjection<2, 6, 2>>;
    static_assert(std::is_same_v<M::output_shape, hpf::Shape<6, 3, 3>>);
    auto r = hpf_test::gradient_check<M>(3);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
  SUBCASE("pre-activation bottleneck, identity") {
    using M = hpf::Sequential<hpf::Input<6, 4, 3>, hpf::zoo::PreActBottleneck<2, 6>>;
    auto r = hpf_test::gradient_check<M>(3);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
}

TEST_CASE("SubsampleZeroPad: keeps every S-th pixel, pads channels on both sides") {
  using M = hpf::Sequential<hpf::Input<2, 4, 4>, hpf::SubsampleZeroPad<6, 2>>;
  static_assert(std::is_same_v<M::output_shape, hpf::Shape<6, 2, 2>>);
  hpf::Network<M, double> net;
  auto tape = net.make_tape(1);
  const auto x = hpf_test::fill_uniform(net.input(tape, 1), 3);
  net.forward(tape, 1);
  const auto y = hpf_test::to_host(net.output(tape));
  for (std::size_t c = 0; c < 6; ++c)
    for (std::size_t oh = 0; oh < 2; ++oh)
      for (std::size_t ow = 0; ow < 2; ++ow) {
        const double expected = (c >= 2 && c < 4) ? x[(c - 2) * 16 + oh * 2 * 4 + ow * 2] : 0.0;
        CHECK(y[c * 4 + oh * 2 + ow] == expected);
      }
  CHECK(hpf_test::gradient_check<M>(2).worst_input_error < 1e-6);
}
