#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

TEST_CASE("SoftmaxCrossEntropy: probabilities, loss, accuracy and gradient") {
  using M = hpf::Sequential<hpf::Input<4>, hpf::SoftmaxCrossEntropy>;
  static_assert(M::trainable);
  hpf::Network<M, double> net;
  constexpr std::size_t N = 5;
  auto tape = net.make_tape(N);
  const auto logits = hpf_test::fill_uniform(net.input(tape, N), 1, -4, 4);
  auto labels = Kokkos::create_mirror_view(net.labels(tape, N));
  for (std::size_t j = 0; j < N; ++j) labels(j) = static_cast<std::int32_t>((j * 3) % 4);
  Kokkos::deep_copy(net.labels(tape, N), labels);
  net.forward(tape, N);
  const auto p = hpf_test::to_host(net.output(tape));
  double expected_loss = 0;
  std::size_t expected_correct = 0;
  for (std::size_t j = 0; j < N; ++j) {
    double z = 0;
    std::size_t best = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      z += std::exp(logits[k * N + j]);
      if (logits[k * N + j] > logits[best * N + j]) best = k;
    }
    for (std::size_t k = 0; k < 4; ++k) CHECK(p[k * N + j] == doctest::Approx(std::exp(logits[k * N + j]) / z));
    expected_loss += std::log(z) - logits[labels(j) * N + j];
    expected_correct += best == static_cast<std::size_t>(labels(j));
  }
  CHECK(net.loss_sum(tape) == doctest::Approx(expected_loss));
  CHECK(net.correct(tape) == expected_correct);
  auto r = hpf_test::gradient_check<M>(N);
  CHECK(r.worst_input_error < 1e-6);
}

TEST_CASE("SoftmaxCrossEntropy: large logits do not overflow") {
  using M = hpf::Sequential<hpf::Input<3>, hpf::SoftmaxCrossEntropy>;
  hpf::Network<M> net;
  auto tape = net.make_tape(1);
  auto x = Kokkos::create_mirror_view(net.input(tape, 1));
  x(0, 0, 0) = 1000.f;
  x(1, 0, 0) = 0.f;
  x(2, 0, 0) = -1000.f;
  Kokkos::deep_copy(net.input(tape, 1), x);
  Kokkos::deep_copy(net.labels(tape, 1), 1);
  net.forward(tape, 1);
  CHECK(net.loss_sum(tape) == doctest::Approx(1000.0f));
}

TEST_CASE("SoftmaxCrossEntropy: a learnt sample's small loss keeps its digits in float") {
  // The label's logit is the largest by d: the loss is log(1 + 9 e^-d), 3e-3 to 3e-5 here.
  // Computed as max + log(sum) - logit, it would be rounded to the ulp of the logit (about 1e-6:
  // up to 5 % of these losses), and as log(1 + others) to float's ulp of 1 (0.2 % of 3e-5).
  using M = hpf::Sequential<hpf::Input<10>, hpf::SoftmaxCrossEntropy>;
  hpf::Network<M> net;
  auto tape = net.make_tape(1);
  for (const float d : {8.0f, 8.37f, 9.1f, 9.8f, 10.45f, 11.2f, 12.6f}) {
    auto x = Kokkos::create_mirror_view(net.input(tape, 1));
    for (std::size_t k = 0; k < 10; ++k) x(k, 0, 0) = 3.0f;
    x(4, 0, 0) = 3.0f + d;
    Kokkos::deep_copy(net.input(tape, 1), x);
    Kokkos::deep_copy(net.labels(tape, 1), 4);
    net.forward(tape, 1);
    const double exact = std::log1p(9.0 * std::exp(-(double(x(4, 0, 0)) - 3.0)));
    INFO("logit margin ", d, ": loss ", net.loss_sum(tape), ", exact ", exact);
    CHECK(std::abs(double(net.loss_sum(tape)) - exact) <= 1e-5 * exact);
  }
}

TEST_CASE("SoftmaxCrossEntropy on sequences: a label per position, a sample's loss the mean of its positions'") {
  constexpr std::size_t T = 3, K = 4, N = 2;
  using M = hpf::Sequential<hpf::Input<T, K>, hpf::SoftmaxCrossEntropy>;
  static_assert(hpf::Network<M, double>::label_size == T);
  hpf::Network<M, double> net;
  auto tape = net.make_tape(N);
  const auto logits = hpf_test::fill_uniform(net.input(tape, N), 3, -4, 4);  // [K][N][T]
  auto labels = Kokkos::create_mirror_view(net.labels(tape, N));             // [N][T]
  REQUIRE(labels.extent(0) == N * T);
  for (std::size_t e = 0; e < N * T; ++e) labels(e) = static_cast<std::int32_t>((e * 5 + 1) % K);
  Kokkos::deep_copy(net.labels(tape, N), labels);
  net.forward(tape, N);
  const auto p = hpf_test::to_host(net.output(tape));
  const auto at = [](std::size_t k, std::size_t j, std::size_t t) { return (k * N + j) * T + t; };
  double expected_loss = 0;
  std::size_t expected_correct = 0;
  for (std::size_t j = 0; j < N; ++j) {
    for (std::size_t t = 0; t < T; ++t) {
      double z = 0;
      std::size_t best = 0;
      for (std::size_t k = 0; k < K; ++k) {
        z += std::exp(logits[at(k, j, t)]);
        if (logits[at(k, j, t)] > logits[at(best, j, t)]) best = k;
      }
      for (std::size_t k = 0; k < K; ++k) CHECK(p[at(k, j, t)] == doctest::Approx(std::exp(logits[at(k, j, t)]) / z));
      const std::size_t label = static_cast<std::size_t>(labels(j * T + t));
      expected_loss += (std::log(z) - logits[at(label, j, t)]) / T;
      expected_correct += best == label;
    }
  }
  CHECK(net.loss_sum(tape) == doctest::Approx(expected_loss).epsilon(1e-14));
  CHECK(net.correct(tape) == expected_correct);
  auto r = hpf_test::gradient_check<M>(N);
  CHECK(r.worst_input_error < 1e-6);
}

TEST_CASE_TEMPLATE("SoftmaxCrossEntropy on sequences: a position's bits do not depend on its batch", T, float, double) {
  // P = 45: a full block of positions and a shorter one on the host (see
  // loss_positions_per_block). Each sample alone (N = 1) must give the bits it gives in a batch
  // of 3: data-, pipeline- and hybrid-parallel training split batches differently.
  constexpr std::size_t P = 45, K = 7, N = 3;
  using M = hpf::Sequential<hpf::Input<P, K>, hpf::SoftmaxCrossEntropy>;
  hpf::Network<M, T> net;
  auto tape = net.make_tape(N);
  const auto logits = hpf_test::fill_uniform(net.input(tape, N), 11, -30, 30);  // [K][N][P]
  std::vector<std::int32_t> labels(N * P);
  for (std::size_t e = 0; e < N * P; ++e) labels[e] = static_cast<std::int32_t>((e * 5 + 2) % K);
  const auto run = [&](std::size_t n, const std::vector<std::size_t>& samples) {
    auto x = Kokkos::create_mirror_view(net.input(tape, n));
    auto l = Kokkos::create_mirror_view(net.labels(tape, n));
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t p = 0; p < P; ++p) {
        for (std::size_t k = 0; k < K; ++k) x(k, j, p) = static_cast<T>(logits[(k * N + samples[j]) * P + p]);
        l(j * P + p) = labels[samples[j] * P + p];
      }
    }
    Kokkos::deep_copy(net.input(tape, n), x);
    Kokkos::deep_copy(net.labels(tape, n), l);
    net.forward(tape, n);
    Kokkos::View<T*, typename decltype(net.input(tape, n))::memory_space> dx_buffer("dx", K * n * P);
    const auto dx = hpf::activation_view(dx_buffer, K, n, P);
    net.backward(tape, T(1) / T(N), {}, dx);
    struct Result {
      std::vector<double> y, dx;
      T loss;
      std::size_t correct;
    };
    return Result{hpf_test::to_host(net.output(tape)), hpf_test::to_host(dx), net.loss_sum(tape), net.correct(tape)};
  };
  const auto batch = run(N, {0, 1, 2});
  T loss = 0;  // added in sample order, as loss_sum adds a batch's
  std::size_t correct = 0;
  for (std::size_t s = 0; s < N; ++s) {
    const auto alone = run(1, {s});
    for (std::size_t k = 0; k < K; ++k) {
      for (std::size_t p = 0; p < P; ++p) {
        REQUIRE(alone.y[k * P + p] == batch.y[(k * N + s) * P + p]);
        REQUIRE(alone.dx[k * P + p] == batch.dx[(k * N + s) * P + p]);
      }
    }
    loss += alone.loss;
    correct += alone.correct;
  }
  CHECK(loss == batch.loss);
  CHECK(correct == batch.correct);
}
