#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

TEST_CASE("Dense: shapes and constexpr costs") {
  using M = hpf::Sequential<hpf::Input<20>, hpf::Dense<7>>;
  static_assert(std::is_same_v<M::output_shape, hpf::Shape<7>>);
  static_assert(M::cost.parameters == 20 * 7 + 7);
  static_assert(M::cost.forward_flops == 2 * 20 * 7 + 7);
  using NoBiasModel = hpf::Sequential<hpf::Input<20>, hpf::Dense<7, hpf::NoBias>>;
  static_assert(NoBiasModel::cost.parameters == 20 * 7);
  hpf::Network<M> net;
  CHECK(net.parameter_count() == 147);
  CHECK(net.tensor("0.weight").dims == std::vector<std::size_t>{7, 20});
  CHECK(net.tensor("0.bias").dims == std::vector<std::size_t>{7});
}

TEST_CASE("Dense: forward computes W x + b") {
  using M = hpf::Sequential<hpf::Input<3>, hpf::Dense<2>>;
  hpf::Network<M, double> net;
  net.write(net.tensor("0.weight"), {1, 2, 3, 4, 5, 6});
  net.write(net.tensor("0.bias"), {0.5, -1});
  auto tape = net.make_tape(2);
  auto x = Kokkos::create_mirror_view(net.input(tape, 2));
  // x is [C=3][N=2][S=1]: sample 0 = (1, 0, -1), sample 1 = (2, 1, 0)
  x(0, 0, 0) = 1; x(1, 0, 0) = 0; x(2, 0, 0) = -1;
  x(0, 1, 0) = 2; x(1, 1, 0) = 1; x(2, 1, 0) = 0;
  Kokkos::deep_copy(net.input(tape, 2), x);
  net.forward(tape, 2);
  auto y = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, net.output(tape));
  CHECK(y(0, 0, 0) == doctest::Approx(1 - 3 + 0.5));
  CHECK(y(1, 0, 0) == doctest::Approx(4 - 6 - 1));
  CHECK(y(0, 1, 0) == doctest::Approx(2 + 2 + 0.5));
  CHECK(y(1, 1, 0) == doctest::Approx(8 + 5 - 1));
}

TEST_CASE("Dense, ReLU, Flatten, SoftmaxCrossEntropy: finite-difference gradients") {
  SUBCASE("Dense") {
    auto r = hpf_test::gradient_check<hpf::Sequential<hpf::Input<13>, hpf::Dense<6>>>(5);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
  SUBCASE("Dense without bias") {
    auto r = hpf_test::gradient_check<hpf::Sequential<hpf::Input<4>, hpf::Dense<9, hpf::NoBias>>>(3);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
  SUBCASE("MLP with loss") {
    using M = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::Flatten, hpf::Dense<8>, hpf::ReLU, hpf::Dense<5>,
                              hpf::SoftmaxCrossEntropy>;
    auto r = hpf_test::gradient_check<M>(7);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
}
