// SPDX-License-Identifier: MIT
#ifndef HPF_ORACLE_NOISE_HPP
#define HPF_ORACLE_NOISE_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace hpf::oracle {

/// \brief How unevenly a host's cores compute over time (system noise), as a fixed-work-quantum
/// probe measured it (`measure_noise`): per window of wall time, the distribution of the slowdown
/// X = window / work done in it (in units of the quietest quantum's time), one core per thread, all
/// cores at once, as ranks compute.
///
/// It prices two things. Calibration keeps the median of timed passes, which leaves the rare long
/// stalls out, while a step pays them on average: the oracle scales a pass of t seconds by the
/// long-run slowdown over the median of windows of t. And replicas reduce their gradients together,
/// so a step waits for the slowest of them: of R ranks that each compute for W seconds, the last
/// ends E[max of R draws of X_W] / E[X_W] times later than the one computing at the mean rate. On
/// the 2-vCPU AMD EPYC of 2026-11-29 one core ran a spell of 20 % slower steps while the other did
/// not, for half a second at a time; the noise of 80 ms windows put E[max of 2] 3 % above the
/// mean, which was the data-parallel steps' excess over their prediction on the emulated fabrics.
struct NoiseProfile {
  std::vector<double> windows_s;               ///< increasing
  std::vector<std::vector<double>> slowdowns;  ///< per window: equally likely values of X, increasing
  std::size_t threads = 0;                     ///< cores measured at once
  double seconds = 0;                          ///< the probe's duration
  double quantum_s = 0;                        ///< the quietest quantum

  bool empty() const { return windows_s.empty(); }

  /// E[max of `ranks` independent draws] / E[one draw] of the slowdown over `window_s` seconds
  /// (log-interpolated between measured windows, the nearest one outside them); 1 without a probe.
  double expected_max_ratio(double window_s, std::size_t ranks) const {
    if (empty() || ranks <= 1 || !(window_s > 0)) return 1.0;
    return at_window(window_s, [&](const std::vector<double>& x) { return max_ratio(x, ranks); });
  }

  /// The long-run slowdown: all the work over all the time, 1 / E[1/X] over equal windows (the same
  /// for any window; the largest window's values are the least averaged). 1 without a probe.
  double long_run_slowdown() const {
    if (empty()) return 1.0;
    double inverse = 0;
    for (const double x : slowdowns.back()) inverse += 1 / x / static_cast<double>(slowdowns.back().size());
    return 1 / inverse;
  }

  /// The median slowdown over windows of `window_s` (log-interpolated, the nearest window outside
  /// the probe's); 1 without a probe.
  double median_slowdown(double window_s) const {
    if (empty() || !(window_s > 0)) return 1.0;
    return at_window(window_s, [](const std::vector<double>& x) {
      const std::size_t n = x.size();
      return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
    });
  }

  /// E[max of n draws] / mean over equally likely sorted values x_1..x_K: draw i is the largest
  /// with probability (i/K)^n - ((i-1)/K)^n.
  static double max_ratio(const std::vector<double>& sorted, std::size_t n) {
    if (sorted.empty()) return 1.0;
    const double k = static_cast<double>(sorted.size());
    double mean = 0, largest = 0;
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      const double p = std::pow((static_cast<double>(i) + 1) / k, static_cast<double>(n)) -
                       std::pow(static_cast<double>(i) / k, static_cast<double>(n));
      mean += sorted[i] / k;
      largest += sorted[i] * p;
    }
    return mean > 0 ? std::max(1.0, largest / mean) : 1.0;
  }

 private:
  /// `of(slowdowns of a window)` at `window_s`: log-interpolated between the measured windows, the
  /// nearest one's outside them.
  template <class Of>
  double at_window(double window_s, const Of& of) const {
    if (window_s <= windows_s.front()) return of(slowdowns.front());
    if (window_s >= windows_s.back()) return of(slowdowns.back());
    std::size_t k = 1;
    while (windows_s[k] < window_s) ++k;
    const double t = std::log(window_s / windows_s[k - 1]) / std::log(windows_s[k] / windows_s[k - 1]);
    const double below = of(slowdowns[k - 1]);
    return below + t * (of(slowdowns[k]) - below);
  }
};

}  // namespace hpf::oracle

#endif  // HPF_ORACLE_NOISE_HPP
