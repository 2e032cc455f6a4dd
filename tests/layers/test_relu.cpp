#include <hpf/layers/relu.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

TEST_CASE("ReLU: max(x, 0) on any shape, gradient through positive inputs") {
  using M = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::ReLU>;
  static_assert(std::is_same_v<M::output_shape, hpf::Shape<2, 3, 3>>);
  static_assert(M::cost.parameters == 0);
  hpf::Network<M, double> net;
  auto tape = net.make_tape(2);
  const auto x = hpf_test::fill_uniform(net.input(tape, 2), 3);
  net.forward(tape, 2);
  const auto y = hpf_test::to_host(net.output(tape));
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(y[i] == (x[i] > 0 ? x[i] : 0.0));
  CHECK(hpf_test::gradient_check<M>(3).worst_input_error < 1e-6);
}
