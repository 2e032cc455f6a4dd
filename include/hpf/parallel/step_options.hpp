// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_STEP_OPTIONS_HPP
#define HPF_PARALLEL_STEP_OPTIONS_HPP

#include <hpf/model/network.hpp>
#include <hpf/optim/optimizer.hpp>
#include <hpf/parallel/bucket_size.hpp>
#include <hpf/parallel/gradient_reduction.hpp>
#include <hpf/parallel/schedule.hpp>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace hpf {

/// What a step whose loss or gradients are not finite (NaN, infinite) does.
enum class NonFinitePolicy {
  stop,  ///< stop training with an error naming the step and where the values first went bad
  skip,  ///< leave parameters, optimizer state and buffers as they were before the step
};

/// \brief What one training step does, whoever runs it (one process or a grid of them).
struct StepOptions {
  /// Global mini-batch: the samples of one optimizer step over all replicas together.
  std::size_t batch = 128;
  /// Micro-batches each replica's share of a mini-batch is split into (pipelining; gradient
  /// accumulation on one process).
  std::size_t micro_batches = 1;
  /// Pipeline schedule of the micro-batches (matters with more than one stage).
  Schedule schedule = Schedule::one_f_one_b;
  /// Size of the gradient buckets reduced among replicas while backward still runs; by default
  /// chosen per stage from its gradient's size and exchange_cost (hpf::choose_bucket_bytes), and
  /// said in the training log.
  std::size_t bucket_bytes = automatic_bucket_bytes;
  /// What a bucket's exchange costs, for the automatic bucket size; hpf::fit reads it from the
  /// machine profile when TrainOptions::oracle_profile or HPF_ORACLE_PROFILE names one.
  ExchangeCost exchange_cost{};
  /// Ranks on different hosts exchange in messages of at most this many bytes (0: whole): the
  /// replicas' gradient buckets and the activations and gradients between pipeline stages. A
  /// message above the transport's eager limit waits for the peer's rendezvous acknowledgement,
  /// which over Open MPI's TCP transport can queue behind the peer's own sending on the one
  /// connection the two share: the two directions take turns. Pieces under the eager limit
  /// (64 KiB for Open MPI's TCP, 128 KiB for MPICH's) keep both flowing: 28.0-29.7 against
  /// 25.2-26.4 ms per data-parallel MLP step on emulated 1 Gbit/s links (docs/oracle.md).
  std::size_t exchange_piece_bytes = std::size_t{60} << 10;
  /// Pieces also between ranks on one host, where shared memory moves a whole message in one
  /// copy (tests; a transport that needs them there too).
  bool pieces_on_one_host = false;
  /// How replicas combine gradients (and in which order single-process training adds the
  /// pieces of data_shards shards, to reproduce it).
  GradientReduction reduction = GradientReduction::automatic;
  /// Whether replicas sharing a host sum their gradients there before the exchange crosses
  /// hosts (hpf::HostHierarchy; by default where the replicas span hosts and share one). The
  /// training log says what each stage does.
  HostHierarchy hierarchy = HostHierarchy::automatic;
  /// What gradients travel as between replicas: ExchangePrecision::bf16 halves the bytes of the
  /// exchange and rounds the gradient the optimizer sees to bf16 (the same bits on every layout).
  ExchangePrecision exchange_precision = ExchangePrecision::full;
  /// What activations and their gradients travel as between pipeline stages: ExchangePrecision::bf16
  /// halves their bytes, and the receiving stage reads them rounded to bf16 (ties to even) while
  /// the sending stage keeps its own in float. Every layout with the same cuts then trains the
  /// same bits, which differ from one process's by those roundings (docs/precision.md). Float
  /// networks only; with one stage nothing travels and nothing is rounded.
  ExchangePrecision stage_precision = ExchangePrecision::full;
  /// What moves messages in flight while layers compute (hpf::ExchangeProgress).
  ExchangeProgress exchange_progress = ExchangeProgress::between_layers;
  /// With ExchangeProgress::thread: how long the progress thread sleeps between calls into MPI.
  /// Each call wakes a thread that, where ranks have no spare core, takes the core from the
  /// layers, so shorter intervals cost more (docs/strategies.md). At 1 Gbit/s a millisecond is
  /// 125 KB, within a TCP socket's buffer.
  std::chrono::microseconds exchange_progress_interval{1000};
  OptimizerOptions optimizer = SgdOptions{.learning_rate = 0.05, .momentum = 0.9};
  /// Seed and scheme of the initial weights.
  NetworkOptions network{};
  /// Seed of the data order (per-epoch shuffles).
  std::uint64_t data_seed = 0;
  /// Samples per forward pass when evaluating.
  std::size_t eval_batch = 250;
  /// A step with a non-finite loss or gradient stops the run (default) or is skipped.
  NonFinitePolicy non_finite = NonFinitePolicy::stop;
};

/// \brief Throws std::invalid_argument naming the first option that cannot work with `replicas`
/// replicas (the data shards of one step). The one check of step options, for every strategy.
inline void check_step_options(const StepOptions& o, std::size_t replicas, const std::string& who) {
  auto fail = [&](const std::string& what) { throw std::invalid_argument(who + ": " + what); };
  if (o.batch == 0) fail("batch must be at least 1");
  if (o.micro_batches == 0) fail("micro_batches must be at least 1");
  if (replicas == 0) fail("at least one replica (data shard) is needed");
  if (o.batch % replicas != 0) {
    fail("the global batch " + std::to_string(o.batch) + " does not split evenly over " + std::to_string(replicas) +
         " replicas");
  }
  if (o.micro_batches > o.batch / replicas) {
    fail(std::to_string(o.micro_batches) + " micro-batches of a " + std::to_string(o.batch / replicas) +
         "-sample replica batch would leave some empty");
  }
  if (!(o.exchange_cost.alpha_s >= 0) || !(o.exchange_cost.beta_s_per_byte >= 0) || !std::isfinite(o.exchange_cost.alpha_s) ||
      !std::isfinite(o.exchange_cost.beta_s_per_byte)) {
    fail("exchange_cost must hold finite seconds >= 0");
  }
  if (o.pieces_on_one_host && o.exchange_piece_bytes == 0) fail("pieces_on_one_host needs exchange_piece_bytes > 0");
  if (o.eval_batch == 0) fail("eval_batch must be at least 1");
  if (o.exchange_progress == ExchangeProgress::thread && o.exchange_progress_interval.count() <= 0) {
    fail("exchange_progress_interval must be at least 1 microsecond");
  }
  if (resolve(o.reduction, replicas) == GradientReduction::ordered && replicas > ordered_sum_max_parts) {
    fail("ordered gradient reduction supports up to " + std::to_string(ordered_sum_max_parts) +
         " replicas; use GradientReduction::allreduce");
  }
  if (o.exchange_precision == ExchangePrecision::bf16 && replicas > 1 &&
      resolve(o.reduction, replicas) != GradientReduction::ordered) {
    fail("exchange_precision bf16 needs the ordered gradient reduction (reduction is " +
         std::string(to_string(resolve(o.reduction, replicas))) + " for " + std::to_string(replicas) + " replicas)");
  }
}

/// Throws std::invalid_argument when `o` asks for bf16 messages (the gradient exchange, or
/// between stages) of a network whose type T is not float (the one check, for every strategy).
template <class T>
void check_exchange_precision(const StepOptions& o, const std::string& who) {
  if constexpr (!std::is_same_v<T, float>) {
    const std::string type = std::is_same_v<T, double> ? "double" : "not float";
    if (o.exchange_precision == ExchangePrecision::bf16) {
      throw std::invalid_argument(who + ": exchange_precision bf16 needs float gradients; this network's are " + type);
    }
    if (o.stage_precision == ExchangePrecision::bf16) {
      throw std::invalid_argument(who + ": stage_precision bf16 needs float activations; this network's are " + type);
    }
  }
}

}  // namespace hpf

#endif  // HPF_PARALLEL_STEP_OPTIONS_HPP
