// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_GRADIENT_REDUCTION_HPP
#define HPF_PARALLEL_GRADIENT_REDUCTION_HPP

#include <hpf/tensor/ordered_sum.hpp>

#include <cstddef>

namespace hpf {

/// How the replicas of a stage combine their parameter gradients.
enum class GradientReduction {
  /// `ordered` up to 8 replicas, `allreduce` beyond.
  automatic,
  /// Add every replica's bucket in a fixed tree (hpf::ordered_sum): the same bits on every rank
  /// with any MPI, and the same bits as one process training on the same pieces. 2 replicas
  /// gather each other's bucket; 3 or more scatter and collect it (each adds every replica's copy
  /// of its 1/R of the bucket, then all collect the sums): each receives 2 (R - 1) / R of a
  /// bucket, as much as a ring allreduce.
  ordered,
  /// MPI_Iallreduce: bandwidth-optimal at any scale; reproducible run to run for a fixed
  /// configuration, but summed in the MPI library's order.
  allreduce,
};

/// Whether replicas on one host combine their gradients before they cross hosts.
enum class HostHierarchy {
  /// `on` when the replicas span hosts and some host holds more than one of them, else `off`.
  automatic,
  /// Each bucket is gathered (ordered) or reduced (allreduce) to one leader per host through
  /// shared memory, exchanged among the leaders only, and broadcast back inside each host: a
  /// host's link carries one host's share instead of every rank's. The ordered reduction adds
  /// each host's part as a subtree of the same tree, so the bits do not change; it needs host h
  /// to hold replicas [h L, h L + L) for a power of two L (as `mpiexec --map-by slot` places
  /// them) and otherwise stays flat, as the training log says.
  on,
  /// Every replica exchanges with every other directly.
  off,
};

inline const char* to_string(HostHierarchy h) {
  switch (h) {
    case HostHierarchy::on:
      return "on";
    case HostHierarchy::off:
      return "off";
    default:
      return "automatic";
  }
}

/// What the replicas' gradients travel as.
enum class ExchangePrecision {
  /// The gradient's own type, unchanged.
  full,
  /// bfloat16, half float's bytes: each data shard's gradient is rounded to bf16 (ties to even),
  /// added in float in the ordered reduction's tree, and the sum rounded to bf16 once more, as a
  /// bf16 message brings it back. Where a host sums its replicas first, the host's partial sum
  /// crosses hosts as float, so the rounding does not depend on the layout: every layout with the
  /// same data shards gets the same bits, one process (TrainOptions::data_shards) included. With
  /// one data shard nothing is exchanged and nothing is rounded. Float gradients and the ordered
  /// reduction only.
  bf16,
};

inline const char* to_string(ExchangePrecision p) { return p == ExchangePrecision::bf16 ? "bf16" : "full"; }

/// What moves the messages in flight (gradient buckets, activations between stages) while layers
/// compute. MPI moves a non-blocking operation only inside MPI calls.
enum class ExchangeProgress {
  /// The training thread tests its operations after every layer of forward and backward (and
  /// posts the buckets backward has finished): nothing moves inside a layer.
  between_layers,
  /// Also a thread per rank that calls into MPI every StepOptions::exchange_progress_interval while a
  /// step runs (hpf::comm::ProgressThread), inside long layers too. Needs MPI_THREAD_MULTIPLE
  /// (HPF_MPI_THREADS=multiple, or system::RuntimeOptions::mpi_thread_multiple); where the MPI
  /// library grants less, training progresses between layers and the log says why.
  thread,
};

inline const char* to_string(ExchangeProgress p) { return p == ExchangeProgress::thread ? "thread" : "between layers"; }

/// The reduction actually used by `replicas` replicas.
constexpr GradientReduction resolve(GradientReduction r, std::size_t replicas) {
  if (r != GradientReduction::automatic) return r;
  return replicas <= 8 ? GradientReduction::ordered : GradientReduction::allreduce;
}

inline const char* to_string(GradientReduction r) {
  switch (r) {
    case GradientReduction::ordered:
      return "ordered";
    case GradientReduction::allreduce:
      return "allreduce";
    default:
      return "automatic";
  }
}

}  // namespace hpf

#endif  // HPF_PARALLEL_GRADIENT_REDUCTION_HPP
