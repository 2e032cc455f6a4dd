#include <hpf/layers/dense.hpp>
#include <hpf/layers/layer_norm.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

TEST_CASE("LayerNorm: each sample normalised over its own features, scaled and shifted per feature") {
  constexpr std::size_t D = 7, N = 5;
  using M = hpf::Sequential<hpf::Input<D>, hpf::LayerNorm>;
  static_assert(M::cost.parameters == 2 * D && M::cost.buffers == 0);
  hpf::Network<M, double> net;
  CHECK(net.tensor("0.weight").dims == std::vector<std::size_t>{D});
  CHECK(net.tensor("0.bias").dims == std::vector<std::size_t>{D});
  std::vector<double> weight(D), bias(D);
  for (std::size_t i = 0; i < D; ++i) {
    weight[i] = 0.5 + 0.25 * static_cast<double>(i);
    bias[i] = 0.1 * static_cast<double>(i) - 0.3;
  }
  net.write(net.tensor("0.weight"), weight);
  net.write(net.tensor("0.bias"), bias);
  auto tape = net.make_tape(N);
  const auto x = hpf_test::fill_uniform(net.input(tape, N), 5, -2.0, 3.0);  // [D][N]
  net.forward(tape, N);
  const auto y = hpf_test::to_host(net.output(tape));
  for (std::size_t j = 0; j < N; ++j) {
    double mean = 0, var = 0;
    for (std::size_t i = 0; i < D; ++i) mean += x[i * N + j] / D;
    for (std::size_t i = 0; i < D; ++i) var += std::pow(x[i * N + j] - mean, 2) / D;  // biased, as PyTorch
    for (std::size_t i = 0; i < D; ++i) {
      const double expected = (x[i * N + j] - mean) / std::sqrt(var + 1e-5) * weight[i] + bias[i];
      CHECK(y[i * N + j] == doctest::Approx(expected).epsilon(1e-14));
    }
  }
}

TEST_CASE("LayerNorm on images: over C x H x W per sample, parameters of the image's shape") {
  constexpr std::size_t C = 3, H = 2, W = 4, N = 3, S = H * W;
  using M = hpf::Sequential<hpf::Input<C, H, W>, hpf::LayerNorm>;
  hpf::Network<M, double> net;
  CHECK(net.tensor("0.weight").dims == std::vector<std::size_t>{C, H, W});
  auto tape = net.make_tape(N);
  const auto x = hpf_test::fill_uniform(net.input(tape, N), 9, 1.0, 4.0);  // [C][N][S]
  net.forward(tape, N);
  const auto y = hpf_test::to_host(net.output(tape));
  for (std::size_t j = 0; j < N; ++j) {
    double mean = 0, var = 0;
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t s = 0; s < S; ++s) mean += x[(c * N + j) * S + s] / (C * S);
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t s = 0; s < S; ++s) var += std::pow(x[(c * N + j) * S + s] - mean, 2) / (C * S);
    double out_mean = 0;
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t s = 0; s < S; ++s) {
        const double expected = (x[(c * N + j) * S + s] - mean) / std::sqrt(var + 1e-5);  // weight 1, bias 0
        CHECK(y[(c * N + j) * S + s] == doctest::Approx(expected).epsilon(1e-14));
        out_mean += y[(c * N + j) * S + s];
      }
    CHECK(std::abs(out_mean) < 1e-12);
  }
}

TEST_CASE("LayerNorm: a sample's output is the same bits in any batch") {
  // What keeps every layout bitwise equal: no statistic crosses samples (unlike BatchNorm).
  using M = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::LayerNorm>;
  hpf::Network<M, double> net;
  auto tape = net.make_tape(4);
  const auto x = hpf_test::fill_uniform(net.input(tape, 4), 11);
  net.forward(tape, 4);
  const auto batch = hpf_test::to_host(net.output(tape));
  constexpr std::size_t C = 2, S = 9;
  auto alone = Kokkos::create_mirror_view(net.input(tape, 1));
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t s = 0; s < S; ++s) alone(c, 0, s) = x[(c * 4 + 2) * S + s];  // sample 2
  Kokkos::deep_copy(net.input(tape, 1), alone);
  net.forward(tape, 1);
  const auto single = hpf_test::to_host(net.output(tape));
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t s = 0; s < S; ++s) {
      const double a = single[c * S + s], b = batch[(c * 4 + 2) * S + s];
      CHECK(std::memcmp(&a, &b, sizeof a) == 0);
    }
}

TEST_CASE("LayerNorm: finite-difference gradients") {
  SUBCASE("vectors") {
    auto r = hpf_test::gradient_check<hpf::Sequential<hpf::Input<6>, hpf::LayerNorm>>(4);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
  SUBCASE("images") {
    auto r = hpf_test::gradient_check<hpf::Sequential<hpf::Input<2, 3, 2>, hpf::LayerNorm>>(3);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
  SUBCASE("between dense layers, under a loss") {
    using M = hpf::Sequential<hpf::Input<5>, hpf::Dense<8>, hpf::LayerNorm, hpf::Dense<3>, hpf::SoftmaxCrossEntropy>;
    auto r = hpf_test::gradient_check<M>(4);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
}

TEST_CASE("LayerNorm on sequences: over each position's D features, parameters [D] (nn.LayerNorm(D))") {
  constexpr std::size_t T = 4, D = 5, N = 3;
  using M = hpf::Sequential<hpf::Input<T, D>, hpf::LayerNorm>;
  static_assert(M::cost.parameters == 2 * D);
  hpf::Network<M, double> net;
  CHECK(net.tensor("0.weight").dims == std::vector<std::size_t>{D});
  std::vector<double> weight(D), bias(D);
  for (std::size_t d = 0; d < D; ++d) {
    weight[d] = 1.5 - 0.2 * static_cast<double>(d);
    bias[d] = 0.05 * static_cast<double>(d);
  }
  net.write(net.tensor("0.weight"), weight);
  net.write(net.tensor("0.bias"), bias);
  auto tape = net.make_tape(N);
  const auto x = hpf_test::fill_uniform(net.input(tape, N), 17, -3.0, 2.0);  // [D][N][T]
  net.forward(tape, N);
  const auto y = hpf_test::to_host(net.output(tape));
  const auto at = [](std::size_t d, std::size_t j, std::size_t t) { return (d * N + j) * T + t; };
  for (std::size_t j = 0; j < N; ++j) {
    for (std::size_t t = 0; t < T; ++t) {
      double mean = 0, var = 0;
      for (std::size_t d = 0; d < D; ++d) mean += x[at(d, j, t)] / D;
      for (std::size_t d = 0; d < D; ++d) var += std::pow(x[at(d, j, t)] - mean, 2) / D;
      for (std::size_t d = 0; d < D; ++d) {
        const double expected = (x[at(d, j, t)] - mean) / std::sqrt(var + 1e-5) * weight[d] + bias[d];
        CHECK(y[at(d, j, t)] == doctest::Approx(expected).epsilon(1e-14));
      }
    }
  }
  auto r = hpf_test::gradient_check<M>(3);
  CHECK(r.worst_input_error < 1e-6);
  CHECK(r.worst_parameter_error < 1e-6);
}
