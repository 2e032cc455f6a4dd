// SPDX-License-Identifier: MIT
// The system-noise model of the oracle: the expected slowest of R replicas, worked out by hand, and
// the fixed-work-quantum probe's windows on made-up quanta and on this host.
#include <hpf/oracle/noise.hpp>
#include <hpf/oracle/noise_probe.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

using hpf::oracle::NoiseProfile;

TEST_CASE("the slowest of n draws of equally likely slowdowns, over the mean") {
  // {1, 2}: the larger of two draws is 1 only if both are (1/4): E = 1/4 + 2 * 3/4 = 7/4, mean 3/2.
  CHECK(NoiseProfile::max_ratio({1, 2}, 2) == doctest::Approx(7.0 / 6.0));
  // {1, 1, 4}: of three draws the largest is 1 with probability (2/3)^3 = 8/27.
  CHECK(NoiseProfile::max_ratio({1, 1, 4}, 3) == doctest::Approx((8.0 / 27 + 4 * 19.0 / 27) / 2));
  CHECK(NoiseProfile::max_ratio({1.1, 1.1, 1.1}, 64) == doctest::Approx(1.0));  // no spread, no skew
  CHECK(NoiseProfile::max_ratio({1, 2}, 1) == doctest::Approx(1.0));
}

TEST_CASE("the skew ratio is the nearest window's outside the probe's, log-interpolated between") {
  NoiseProfile n;
  n.windows_s = {1e-3, 100e-3};
  n.slowdowns = {{1, 2}, {1, 1}};
  CHECK(n.expected_max_ratio(0.5e-3, 2) == doctest::Approx(7.0 / 6.0));
  CHECK(n.expected_max_ratio(1, 2) == doctest::Approx(1.0));
  CHECK(n.expected_max_ratio(10e-3, 2) == doctest::Approx(1 + (7.0 / 6.0 - 1) / 2));  // halfway in log
  CHECK(n.expected_max_ratio(10e-3, 1) == 1.0);                                    // one replica waits for none
  CHECK(NoiseProfile{}.expected_max_ratio(10e-3, 64) == 1.0);                       // no probe, no skew
}

TEST_CASE("the long-run slowdown is all the time over all the work; the median is a window's") {
  NoiseProfile n;
  n.windows_s = {1e-3, 100e-3};
  n.slowdowns = {{1, 1, 4}, {1, 2}};
  // Two equal windows doing 1 and 1/2 of the work: 2 windows' time for 3/2 windows' work.
  CHECK(n.long_run_slowdown() == doctest::Approx(4.0 / 3.0));
  CHECK(n.median_slowdown(0.5e-3) == doctest::Approx(1.0));  // the smallest window's: {1, 1, 4}
  CHECK(n.median_slowdown(1) == doctest::Approx(1.5));       // an even count: the middle two's mean
  CHECK(n.median_slowdown(10e-3) == doctest::Approx(1.25));  // halfway in log
  CHECK(NoiseProfile{}.long_run_slowdown() == 1.0);
  CHECK(NoiseProfile{}.median_slowdown(10e-3) == 1.0);
}

TEST_CASE("a window's slowdown: the window over the work done in it, each quantum at its own rate") {
  // Quanta of 1 ms, except the third, which took 3 ms (interrupted): 0-1, 1-2, 2-5, 5-6, 6-7, 7-8 ms.
  hpf::oracle::detail::QuantumTimes t{0, {1e-3, 2e-3, 5e-3, 6e-3, 7e-3, 8e-3}};
  // Windows of 2 ms: [0, 2) two quanta; [2, 4) two thirds of one; [4, 6) one third and one; [6, 8) two.
  const auto x = hpf::oracle::detail::window_slowdowns({t}, 2e-3, 1e-3);
  REQUIRE(x.size() == 4);
  CHECK(x[0] == doctest::Approx(1.0));
  CHECK(x[1] == doctest::Approx(3.0));
  CHECK(x[2] == doctest::Approx(1.5));
  CHECK(x[3] == doctest::Approx(1.0));
  // Equally likely groups keep the mean: {1, 1, 1.5, 3} in two groups is {1, 2.25}.
  CHECK(hpf::oracle::detail::equally_likely(x, 2) == std::vector<double>{1.0, 2.25});
}

TEST_CASE("the probe on this host: windows that fit eight times, sorted slowdowns around the quantum's") {
  const NoiseProfile n = hpf::oracle::measure_noise(0.5, 2);
  CHECK(n.threads == 2);
  CHECK(n.quantum_s > 0);
  CHECK(n.quantum_s < 5e-3);  // sized to 0.25 ms of work; a loaded host stretches it, not 20-fold
  REQUIRE(!n.windows_s.empty());
  CHECK(n.windows_s.back() * 8 <= 0.5);
  REQUIRE(n.slowdowns.size() == n.windows_s.size());
  for (const auto& x : n.slowdowns) {
    CHECK(std::is_sorted(x.begin(), x.end()));
    CHECK(x.front() > 0);
    CHECK(x[x.size() / 2] >= 0.5);  // the median window does about the quantum's work per quantum time
  }
  CHECK(n.expected_max_ratio(10e-3, 2) >= 1.0);
  CHECK_THROWS_AS(hpf::oracle::measure_noise(0, 2), std::invalid_argument);
}
