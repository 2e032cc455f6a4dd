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

TEST_CASE("Dense on sequences: W x + b at every position (nn.Linear on [N, T, D])") {
  constexpr std::size_t T = 3, D = 4, Out = 2, N = 2;
  using M = hpf::Sequential<hpf::Input<T, D>, hpf::Dense<Out>>;
  static_assert(std::is_same_v<M::output_shape, hpf::Shape<T, Out>>);
  static_assert(M::cost.parameters == D * Out + Out);
  static_assert(M::cost.forward_flops == T * (2 * D * Out + Out) && M::cost.macs == T * D * Out);
  hpf::Network<M, double> net;
  CHECK(net.tensor("0.weight").dims == std::vector<std::size_t>{Out, D});
  const std::vector<double> w{1, -2, 3, 0.5, -1, 0.25, 2, 4}, b{0.5, -1};
  net.write(net.tensor("0.weight"), w);
  net.write(net.tensor("0.bias"), b);
  auto tape = net.make_tape(N);
  auto x = Kokkos::create_mirror_view(net.input(tape, N));  // [D][N][T]
  for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<double>(i % 7) - 3;
  Kokkos::deep_copy(net.input(tape, N), x);
  net.forward(tape, N);
  auto y = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, net.output(tape));  // [Out][N][T]
  for (std::size_t j = 0; j < N; ++j)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t o = 0; o < Out; ++o) {
        double expected = b[o];
        for (std::size_t d = 0; d < D; ++d) expected += w[o * D + d] * x(d, j, t);
        CHECK(y(o, j, t) == expected);  // small integers and halves: exact in any order
      }
  auto r = hpf_test::gradient_check<M>(N);
  CHECK(r.worst_input_error < 1e-6);
  CHECK(r.worst_parameter_error < 1e-6);
}
