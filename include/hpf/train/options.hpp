// SPDX-License-Identifier: MIT
#ifndef HPF_TRAIN_OPTIONS_HPP
#define HPF_TRAIN_OPTIONS_HPP

#include <hpf/parallel/step_options.hpp>
#include <hpf/train/checkpoint_options.hpp>
#include <hpf/train/progress.hpp>
#include <hpf/trace/options.hpp>

#include <cmath>
#include <cstddef>
#include <functional>
#include <iostream>
#include <ostream>
#include <vector>

namespace hpf {

/// \brief Settings of a training run, the same for every strategy (one process or many): what
/// each step does (StepOptions) and how many steps, with what reporting.
struct TrainOptions : StepOptions {
  std::size_t epochs = 1;
  /// Data shards of the sampler for single-process training (hpf::Trainer); hpf::fit uses
  /// shards_per_replica per replica. One process given a parallel run's shard count (replicas x
  /// shards_per_replica) visits exactly that run's samples, in the same pieces, and reproduces its
  /// result.
  std::size_t data_shards = 1;
  /// hpf::fit: data shards each replica trains per step, its piece of the batch cut in that many
  /// (R replicas train R x shards_per_replica shards; replica r the shards r, r + R, ...), each
  /// with BatchNorm statistics of its own, as that many ranks have them. With
  /// shards_side_by_side, a rank of C threads trains C shards at once, as fast as C ranks.
  std::size_t shards_per_replica = 1;
  /// Train the data shards (hpf::Trainer's data_shards; hpf::fit's shards_per_replica, with one
  /// stage) side by side, one per thread of Kokkos OpenMP (3.x), each with single-threaded kernels
  /// and a network of its own on the shared parameters, instead of one after another on all
  /// threads. The same bits (the shards are parked and added in the ordered reduction's tree; with
  /// GradientReduction::allreduce they run one after another), as fast as that many ranks with one
  /// thread each. Costs a gradient copy and the workspace per shard. Other backends, pipelines,
  /// and steps while a Kokkos tool is loaded, run them one after another.
  bool shards_side_by_side = false;
  /// Stop each epoch after this many steps (0: whole epochs). For smoke runs and benchmarks.
  std::size_t steps_per_epoch = 0;
  /// Evaluate on the test set after each epoch (when one is given).
  bool evaluate = true;
  ProgressMode progress = ProgressMode::automatic;
  std::ostream* log = &std::cout;
  /// Per-rank timeline of a window of steps (off by default; HPF_TRACE switches it on in
  /// programs that do not set it).
  trace::TraceOptions trace{};
  /// Seconds hpf::fit lets a rank wait for one communication before it ends the job naming what
  /// it waited for (0: forever); negative: HPF_WAIT_TIMEOUT, else 600 s (hpf/comm/watchdog.hpp).
  double wait_limit = -1;
  /// Checkpoints to write and to resume from (none by default).
  CheckpointOptions checkpoint{};
  /// Called on every rank after each optimizer step with the number of steps taken so far (for
  /// logging, a custom stop, or a test that kills the job at a known step).
  std::function<void(std::size_t global_step)> after_step;
  /// Machine profile hpf::Auto predicts with (empty: $HPF_ORACLE_PROFILE); `hpf-oracle
  /// calibrate` writes its compute part.
  std::string oracle_profile;
  /// Seconds hpf::Auto's canary may take before it chooses (0: none): the model's layers on every
  /// rank at once, each on its shard of the training data, whose slowest time over the profile's
  /// rescales its compute (a host drifts after calibration; hpf::oracle::canary).
  double oracle_canary_seconds = 1.5;
};

/// `options` with the trace settings of the environment (hpf::trace::TraceOptions::
/// from_environment) when the program set none.
inline TrainOptions with_environment_trace(TrainOptions options) {
  if (!options.trace.enabled()) options.trace = trace::TraceOptions::from_environment();
  return options;
}

/// What a whole run did: per-epoch reports and the loss of every step.
struct TrainReport {
  std::vector<EpochReport> epochs;
  std::vector<double> step_losses;
  /// hpf::Auto: the strategy the oracle chose and its predicted seconds per step (NaN otherwise).
  std::string chosen_strategy;
  double predicted_step_seconds = NAN;
  /// hpf::fit: data shards this rank trained side by side, one per thread
  /// (TrainOptions::shards_side_by_side); 0 when one after another.
  std::size_t shard_threads = 0;
  /// Seconds per training step over all epochs (evaluation excluded).
  double step_seconds() const {
    double seconds = 0;
    std::size_t steps = 0;
    for (const EpochReport& e : epochs) {
      seconds += e.seconds;
      steps += e.steps;
    }
    return steps ? seconds / static_cast<double>(steps) : NAN;
  }
  double final_test_accuracy() const { return epochs.empty() ? NAN : epochs.back().test_accuracy; }
  double final_test_loss() const { return epochs.empty() ? NAN : epochs.back().test_loss; }
};

}  // namespace hpf

#endif  // HPF_TRAIN_OPTIONS_HPP
