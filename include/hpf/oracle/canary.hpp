// SPDX-License-Identifier: MIT
#ifndef HPF_ORACLE_CANARY_HPP
#define HPF_ORACLE_CANARY_HPP

#include <hpf/oracle/calibrate.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

namespace hpf::oracle {

/// \brief A short pass of Model's layers now against the same layers in the profile: how much
/// slower (> 1) or faster this host computes than when it was calibrated. Hosts drift (virtual
/// machines, clock frequency, neighbours): a profile calibrated an hour before its runs predicted
/// 73 % of their time where one calibrated just before predicted 92 %, with the same ranking
/// (docs/oracle.md). The canary times every layer alone at the largest calibrated micro-batch, up
/// to the run's, whose `repeats` + 1 passes fit in `seconds`, and as many passes there as fill
/// `seconds` (each layer's median pass), on `samples` like calibration's (pooling and ReLU take time
/// that depends on the values: give it what calibrate ran on).
struct Canary {
  double ratio = 1;         ///< now / at calibration, the model's forward and backward summed
  double batch = 0;         ///< the micro-batch it ran (0: the profile has none of Model's layers)
  std::size_t repeats = 0;  ///< its timed passes
  double seconds = 0;       ///< what it took
};

/// \brief What a canary of Model runs, from the profile alone: the micro-batch and the layers'
/// calibrated seconds there (a rank without the profile times the same batch: canary_seconds).
struct CanaryPlan {
  double batch = 0;         ///< 0: the profile has none of Model's layers
  double calibrated_s = 0;  ///< the model's forward and backward at `batch`, as calibrated
  std::size_t repeats = 0;  ///< timed passes: as many as fill the seconds, at least the minimum asked
};

/// Timed passes a canary takes at most, however cheap the model: their timings stay a few KiB.
inline constexpr std::size_t canary_max_repeats = 1000;

/// The largest calibrated micro-batch not above `batch_at_most` (the micro-batch the run computes;
/// the smallest calibrated one where all are above it) whose `min_repeats` + 1 passes fit in
/// `seconds`, and as many timed passes there as fill `seconds`.
/// - The run's micro-batch: a host's drift does not slow every size alike. ResNet-20's layers at
///   128 samples took 0.89x their calibrated time where its training at 64 took 0.82x the
///   prediction and its layers at 64 took 0.80-0.82x, minutes apart.
/// - Many passes: a cheap model's few passes last milliseconds, and one of them slowed by a
///   neighbour moved the median of 3 by half (an MLP's canary read 0.66-1.26 over runs whose steps
///   held within 2 %); the median of passes spread over the seconds given does not move so.
template <class Model>
CanaryPlan canary_plan(const MachineProfile& profile, double seconds = 1.5, MatmulPrecision precision = MatmulPrecision::full,
                       double batch_at_most = std::numeric_limits<double>::infinity(), std::size_t min_repeats = 3) {
  const std::vector<std::string> keys = layer_keys<Model>(precision);
  using where = hpf::detail::layer_positions<Model>;
  // The model's forward and backward at micro-batch b, as the profile has it (0: a layer missing).
  auto calibrated = [&](double b) {
    double sum = 0;
    for (std::size_t u = 0; u < keys.size(); ++u) {
      const UnitTiming* t = profile.unit(keys[u]);
      if (!t) return 0.0;
      sum += static_cast<double>(where::copies[u]) * (t->forward(b) + t->backward(b));
    }
    return sum;
  };
  CanaryPlan plan;
  const UnitTiming* first = keys.empty() ? nullptr : profile.unit(keys.front());
  if (!first) return plan;
  for (double b : first->batch) {
    if (b > batch_at_most) continue;
    const double t = calibrated(b);
    if (t > 0 && t * static_cast<double>(min_repeats + 1) <= seconds) plan.batch = b;
  }
  if (plan.batch == 0) plan.batch = first->batch.front();
  plan.calibrated_s = calibrated(plan.batch);
  if (!(plan.calibrated_s > 0)) return CanaryPlan{};
  // canary_seconds runs one pass, then an untimed and a timed pass per repeat.
  const double fill = std::floor((seconds / plan.calibrated_s - 1) / 2);
  plan.repeats = fill >= static_cast<double>(canary_max_repeats) ? canary_max_repeats
                                                                  : std::max(min_repeats, static_cast<std::size_t>(std::max(0.0, fill)));
  return plan;
}

/// Model's forward and backward at `batch` now, timed as calibration times them (the median of
/// `repeats` passes; a Repeat's span covers its copies), without the optimizer's and the loading's
/// calibration, which a canary's ratio does not read.
template <class Model, class T = float, class Space = Kokkos::DefaultExecutionSpace>
double canary_seconds(double batch, MatmulPrecision precision = MatmulPrecision::full, const data::Dataset* samples = nullptr,
                      std::size_t repeats = 3) {
  CalibrationOptions o;
  o.batches = {static_cast<std::size_t>(batch)};
  o.repeats = repeats;
  o.matmul_precision = precision;
  o.samples = samples;
  o.tapes_in_flight = false;
  double now = 0;
  for (const UnitTiming& t : detail::time_layers<Model, T, Space>(o)) now += t.forward_s.front() + t.backward_s.front();
  return now;
}

template <class Model, class T = float, class Space = Kokkos::DefaultExecutionSpace>
Canary canary(const MachineProfile& profile, double seconds = 1.5, MatmulPrecision precision = MatmulPrecision::full,
              const data::Dataset* samples = nullptr, double batch_at_most = std::numeric_limits<double>::infinity(),
              std::size_t min_repeats = 3) {
  const auto start = detail::Clock::now();
  const CanaryPlan plan = canary_plan<Model>(profile, seconds, precision, batch_at_most, min_repeats);
  if (plan.batch == 0) return Canary{};
  Canary out;
  out.batch = plan.batch;
  out.repeats = plan.repeats;
  out.ratio = canary_seconds<Model, T, Space>(plan.batch, precision, samples, plan.repeats) / plan.calibrated_s;
  out.seconds = detail::seconds_since(start);
  return out;
}

/// \brief `profile` with every calibrated compute price multiplied by `ratio` (a Canary's): the
/// layers alone and busy, the optimizer, batch loading and the exchange's sums. Communication is
/// left as fitted.
inline void rescale_compute(MachineProfile& profile, double ratio) {
  if (!(ratio > 0) || !std::isfinite(ratio)) return;
  for (auto& [key, t] : profile.units) {
    for (std::vector<double>* v : {&t.forward_s, &t.backward_s, &t.busy_forward_s, &t.busy_backward_s}) {
      for (double& s : *v) s *= ratio;
    }
  }
  profile.optimizer_s_per_parameter *= ratio;
  profile.load_s_per_element *= ratio;
  profile.exchange_sum_s_per_element *= ratio;
}

}  // namespace hpf::oracle

#endif  // HPF_ORACLE_CANARY_HPP
