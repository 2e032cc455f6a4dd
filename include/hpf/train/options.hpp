// SPDX-License-Identifier: MIT
#ifndef HPF_TRAIN_OPTIONS_HPP
#define HPF_TRAIN_OPTIONS_HPP

#include <hpf/model/network.hpp>
#include <hpf/optim/optimizer.hpp>
#include <hpf/train/gradient_reduction.hpp>
#include <hpf/train/progress.hpp>
#include <hpf/train/schedule_kind.hpp>

#include <cstddef>
#include <cstdint>
#include <iostream>
#include <ostream>

namespace hpf {

/// \brief Settings of a training run, the same for every strategy (one process or many).
struct TrainOptions {
  std::size_t epochs = 1;
  /// Global mini-batch: the samples of one optimizer step over all replicas together.
  std::size_t batch = 128;
  /// Micro-batches each replica's share of a mini-batch is split into (pipelining; gradient
  /// accumulation on one process).
  std::size_t micro_batches = 1;
  /// Pipeline schedule of the micro-batches (matters with more than one stage).
  Schedule schedule = Schedule::one_f_one_b;
  /// Size of the gradient buckets reduced among replicas while backward still runs.
  std::size_t bucket_bytes = std::size_t{4} << 20;
  /// How replicas combine gradients (and in which order single-process training adds the
  /// pieces of data_shards shards, to reproduce it).
  GradientReduction reduction = GradientReduction::automatic;
  OptimizerOptions optimizer = SgdOptions{.learning_rate = 0.05, .momentum = 0.9};
  /// Seed and scheme of the initial weights.
  NetworkOptions network{};
  /// Seed of the data order (per-epoch shuffles).
  std::uint64_t data_seed = 0;
  /// Data shards of the sampler for single-process training (hpf::Trainer); hpf::fit uses one
  /// per replica. One process given a parallel run's replica count visits exactly that run's
  /// samples, in the same pieces.
  std::size_t data_shards = 1;
  /// Stop each epoch after this many steps (0: whole epochs). For smoke runs and benchmarks.
  std::size_t steps_per_epoch = 0;
  /// Evaluate test accuracy after each epoch (when a test set is given).
  bool evaluate = true;
  std::size_t eval_batch = 250;
  ProgressMode progress = ProgressMode::automatic;
  std::ostream* log = &std::cout;
};

/// What a whole run did: per-epoch reports and the loss of every step.
struct TrainReport {
  std::vector<EpochReport> epochs;
  std::vector<double> step_losses;
  double final_test_accuracy() const { return epochs.empty() ? NAN : epochs.back().test_accuracy; }
};

}  // namespace hpf

#endif  // HPF_TRAIN_OPTIONS_HPP
