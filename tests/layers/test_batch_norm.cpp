#include <hpf/layers/batch_norm.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

TEST_CASE("BatchNorm: training forward normalises each channel and updates running statistics") {
  constexpr std::size_t C = 3, H = 4, W = 5, N = 6, S = H * W;
  using M = hpf::Sequential<hpf::Input<C, H, W>, hpf::BatchNorm>;
  static_assert(M::cost.parameters == 2 * C && M::cost.buffers == 2 * C + 1);
  hpf::Network<M, double> net;
  CHECK(net.tensor("0.running_var").dims == std::vector<std::size_t>{C});
  CHECK(net.tensor("0.num_batches_tracked").size == 1);
  auto tape = net.make_tape(N);
  const auto x = hpf_test::fill_uniform(net.input(tape, N), 5, 1.0, 3.0);
  net.forward(tape, N);
  const auto y = hpf_test::to_host(net.output(tape));
  const auto running_mean = net.read(net.tensor("0.running_mean"));
  const auto running_var = net.read(net.tensor("0.running_var"));
  for (std::size_t c = 0; c < C; ++c) {
    double mean = 0, var = 0, out_mean = 0, out_var = 0;
    for (std::size_t i = 0; i < N * S; ++i) mean += x[c * N * S + i] / (N * S);
    for (std::size_t i = 0; i < N * S; ++i) var += std::pow(x[c * N * S + i] - mean, 2) / (N * S);
    for (std::size_t i = 0; i < N * S; ++i) out_mean += y[c * N * S + i] / (N * S);
    for (std::size_t i = 0; i < N * S; ++i) out_var += std::pow(y[c * N * S + i] - out_mean, 2) / (N * S);
    CHECK(out_mean == doctest::Approx(0).epsilon(1e-12));
    CHECK(out_var == doctest::Approx(var / (var + 1e-5)));
    CHECK(running_mean[c] == doctest::Approx(0.1 * mean));
    CHECK(running_var[c] == doctest::Approx(0.9 + 0.1 * var * (N * S) / (N * S - 1.0)));
  }
  CHECK(net.read(net.tensor("0.num_batches_tracked"))[0] == 1.0);
}

TEST_CASE("BatchNorm: eval forward uses the running statistics") {
  using M = hpf::Sequential<hpf::Input<2>, hpf::BatchNorm>;
  hpf::Network<M, double> net;
  net.write(net.tensor("0.running_mean"), {1.0, -2.0});
  net.write(net.tensor("0.running_var"), {4.0, 0.25});
  net.write(net.tensor("0.weight"), {2.0, 1.0});
  net.write(net.tensor("0.bias"), {0.5, 0.0});
  auto tape = net.make_tape(1);
  auto x = Kokkos::create_mirror_view(net.input(tape, 1));
  x(0, 0, 0) = 3.0;
  x(1, 0, 0) = -1.0;
  Kokkos::deep_copy(net.input(tape, 1), x);
  net.forward(tape, 1, hpf::Mode::eval);
  const auto y = hpf_test::to_host(net.output(tape));
  CHECK(y[0] == doctest::Approx(2.0 * (3.0 - 1.0) / std::sqrt(4.0 + 1e-5) + 0.5));
  CHECK(y[1] == doctest::Approx((-1.0 + 2.0) / std::sqrt(0.25 + 1e-5)));
  CHECK(net.read(net.tensor("0.running_mean"))[0] == 1.0);  // eval leaves them alone
}

TEST_CASE("BatchNorm: finite-difference gradients (training mode)") {
  SUBCASE("images") {
    auto r = hpf_test::gradient_check<hpf::Sequential<hpf::Input<3, 3, 2>, hpf::BatchNorm>>(4);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
  SUBCASE("vectors") {
    auto r = hpf_test::gradient_check<hpf::Sequential<hpf::Input<5>, hpf::BatchNorm>>(7);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
}

TEST_CASE("BatchNorm's reductions: two sums in one pass are the bits of each sum alone") {
  // Lengths below, at and around the 16 lanes, and long ones with a partial last round.
  for (const std::size_t n : {0, 1, 15, 16, 17, 33, 1000, 4099}) {
    std::vector<float> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>((i * 7919) % 1013) / 97.0f - 5.0f;
      b[i] = static_cast<float>((i * 104729) % 997) / 13.0f - 30.0f;
    }
    const auto f = [&](std::size_t i) { return a[i]; };
    const auto g = [&](std::size_t i) { return double(a[i]) * double(b[i]); };
    const auto both = hpf::detail::lane_sums<double>(n, f, g);
    CHECK(both.first == hpf::detail::lane_sum<double>(n, f));
    CHECK(both.second == hpf::detail::lane_sum<double>(n, g));
    double plain = 0;  // and they are sums (to rounding)
    for (std::size_t i = 0; i < n; ++i) plain += g(i);
    CHECK(both.second == doctest::Approx(plain).epsilon(1e-12));
  }
}
