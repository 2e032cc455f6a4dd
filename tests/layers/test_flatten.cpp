#include <hpf/layers/flatten.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

TEST_CASE("Flatten: PyTorch's (C, H, W) feature order") {
  using M = hpf::Sequential<hpf::Input<2, 3, 4>, hpf::Flatten>;
  static_assert(std::is_same_v<M::output_shape, hpf::Shape<24>>);
  hpf::Network<M, double> net;
  constexpr std::size_t N = 3;
  auto tape = net.make_tape(N);
  const auto x = hpf_test::fill_uniform(net.input(tape, N), 8);  // [C][N][HW]
  net.forward(tape, N);
  const auto y = hpf_test::to_host(net.output(tape));  // [F][N]
  for (std::size_t j = 0; j < N; ++j)
    for (std::size_t c = 0; c < 2; ++c)
      for (std::size_t s = 0; s < 12; ++s) CHECK(y[(c * 12 + s) * N + j] == x[(c * N + j) * 12 + s]);
  CHECK(hpf_test::gradient_check<M>(N).worst_input_error < 1e-6);
}

TEST_CASE("Flatten on sequences: PyTorch's (T, D) order of [N, T, D]") {
  constexpr std::size_t T = 3, D = 4, N = 2;
  using M = hpf::Sequential<hpf::Input<T, D>, hpf::Flatten>;
  static_assert(std::is_same_v<M::output_shape, hpf::Shape<T * D>>);
  hpf::Network<M, double> net;
  auto tape = net.make_tape(N);
  const auto x = hpf_test::fill_uniform(net.input(tape, N), 9);  // [D][N][T]
  net.forward(tape, N);
  const auto y = hpf_test::to_host(net.output(tape));  // [T*D][N]
  for (std::size_t j = 0; j < N; ++j)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t d = 0; d < D; ++d) CHECK(y[(t * D + d) * N + j] == x[(d * N + j) * T + t]);
  CHECK(hpf_test::gradient_check<M>(N).worst_input_error < 1e-6);
}
