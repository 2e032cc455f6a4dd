// SPDX-License-Identifier: MIT
#ifndef HPF_ORACLE_NOISE_PROBE_HPP
#define HPF_ORACLE_NOISE_PROBE_HPP

#include <hpf/oracle/noise.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <thread>
#include <vector>

namespace hpf::oracle {

namespace detail {

/// One pass of fixed work: a multiply-add over a small array that stays in the core's cache, so
/// the quantum measures the core's speed and not the memory system's.
inline float noise_work(std::vector<float>& a, const std::vector<float>& b, std::size_t passes) {
  for (std::size_t p = 0; p < passes; ++p) {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = a[i] * 0.999f + b[i];
  }
  return a[a.size() / 2];
}

/// When one thread's quanta ran: back to back from `start`, quantum q ending at ends[q].
struct QuantumTimes {
  double start = 0;
  std::vector<double> ends;
  double begin(std::size_t q) const { return q ? ends[q - 1] : start; }
};

/// The values of `x` in `slices` equally likely groups, each its group's mean (sorted), so the mean
/// and the tail survive the compression; all of `x` when it holds fewer values.
inline std::vector<double> equally_likely(std::vector<double> x, std::size_t slices) {
  std::sort(x.begin(), x.end());
  if (x.size() <= slices) return x;
  std::vector<double> out;
  for (std::size_t s = 0; s < slices; ++s) {
    const std::size_t from = x.size() * s / slices, to = x.size() * (s + 1) / slices;
    double sum = 0;
    for (std::size_t i = from; i < to; ++i) sum += x[i];
    out.push_back(sum / static_cast<double>(to - from));
  }
  return out;
}

/// The slowdown of every whole window of `window` seconds each thread ran: the window over the
/// work done in it, counting each quantum's overlap with the window at that quantum's own rate.
inline std::vector<double> window_slowdowns(const std::vector<QuantumTimes>& threads, double window, double quantum) {
  std::vector<double> out;
  for (const QuantumTimes& t : threads) {
    if (t.ends.empty()) continue;
    const auto windows = static_cast<std::size_t>((t.ends.back() - t.start) / window + 1e-9);  // whole windows
    std::vector<double> work(windows, 0.0);
    for (std::size_t q = 0; q < t.ends.size(); ++q) {
      const double b = t.begin(q), e = t.ends[q], rate = 1.0 / std::max(e - b, 1e-12);
      for (auto w = static_cast<std::size_t>((b - t.start) / window); w < windows; ++w) {
        const double lo = t.start + static_cast<double>(w) * window, hi = lo + window;
        if (lo >= e) break;
        work[w] += (std::min(e, hi) - std::max(b, lo)) * rate;
      }
    }
    for (const double done : work) out.push_back(window / (std::max(done, 1e-9) * quantum));
  }
  return out;
}

}  // namespace detail

/// \brief Measures the host's system noise (NoiseProfile): `threads` threads, one per core the
/// ranks compute on, each running quanta of fixed work (sized to 0.25 ms from passes timed before;
/// 0.18-0.20 ms in the probes of 2026-11-29) back to back for `seconds`
/// (a fixed-work-quantum probe), then the distribution of the slowdown over windows of 1 ms to
/// 0.5 s (those that fit eight times into the probe). Run it with the host otherwise idle.
inline NoiseProfile measure_noise(double seconds, std::size_t threads) {
  using Clock = std::chrono::steady_clock;
  if (!(seconds > 0) || threads == 0) throw std::invalid_argument("hpf::oracle::measure_noise: needs seconds > 0 and threads > 0");
  constexpr std::size_t elements = 4096;  // 32 KiB in two arrays: the core's L1 and L2
  std::vector<float> a(elements, 1.0f), b(elements, 0.5f);
  std::vector<double> sixteen;  // seconds of 16 passes, the median of 11 times sizes the quantum
  for (int r = 0; r < 11; ++r) {
    const auto t0 = Clock::now();
    detail::noise_work(a, b, 16);
    sixteen.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(sixteen.begin(), sixteen.end());
  const auto passes = std::max<std::size_t>(1, static_cast<std::size_t>(16 * 0.25e-3 / std::max(sixteen[5], 1e-9)));

  std::vector<detail::QuantumTimes> times(threads);
  const auto origin = Clock::now();
  const auto since = [origin](Clock::time_point t) { return std::chrono::duration<double>(t - origin).count(); };
  {
    std::vector<std::jthread> workers;
    for (std::size_t k = 0; k < threads; ++k) {
      workers.emplace_back([&, k] {
        std::vector<float> x(elements, 1.0f), y(elements, 0.5f);
        detail::QuantumTimes& mine = times[k];
        mine.ends.reserve(static_cast<std::size_t>(seconds / 0.2e-3) + 16);
        volatile float sink = 0;  // the work's result is kept, so the compiler keeps the work
        mine.start = since(Clock::now());
        while (mine.ends.empty() || mine.ends.back() < seconds) {
          sink = sink + detail::noise_work(x, y, passes);
          mine.ends.push_back(since(Clock::now()));
        }
      });
    }
  }
  std::vector<double> durations;
  for (const auto& t : times) {
    for (std::size_t q = 0; q < t.ends.size(); ++q) durations.push_back(t.ends[q] - t.begin(q));
  }
  if (durations.empty()) throw std::runtime_error("hpf::oracle::measure_noise: no quantum completed");
  std::nth_element(durations.begin(), durations.begin() + static_cast<std::ptrdiff_t>(durations.size() / 2), durations.end());

  NoiseProfile noise;
  noise.threads = threads;
  noise.seconds = seconds;
  noise.quantum_s = durations[durations.size() / 2];
  for (const double window : {1e-3, 2e-3, 5e-3, 10e-3, 20e-3, 50e-3, 100e-3, 200e-3, 500e-3}) {
    if (window * 8 > seconds || window < 4 * noise.quantum_s) continue;
    noise.windows_s.push_back(window);
    noise.slowdowns.push_back(detail::equally_likely(detail::window_slowdowns(times, window, noise.quantum_s), 64));
  }
  return noise;
}

}  // namespace hpf::oracle

#endif  // HPF_ORACLE_NOISE_PROBE_HPP
