// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_GRADIENT_BUCKETS_HPP
#define HPF_PARALLEL_GRADIENT_BUCKETS_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/request.hpp>
#include <hpf/comm/transfer.hpp>
#include <hpf/comm/watchdog.hpp>
#include <hpf/tensor/ordered_sum.hpp>
#include <hpf/parallel/gradient_reduction.hpp>
#include <hpf/tensor/views.hpp>
#include <hpf/trace/region.hpp>
#include <hpf/trace/span.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hpf {

/// \brief Sums a stage's flat gradient array over its replicas in fixed buckets, each started
/// (non-blocking) as soon as backward has finished every gradient in it.
///
/// Buckets are ranges of the flat array cut from its end, because backward finishes the last
/// layers' gradients first. Boundaries depend only on the array size and the bucket size, and
/// buckets always start in the same order, so a fixed configuration reduces identically every
/// run. With GradientReduction::ordered each bucket is gathered from all replicas and added in
/// hpf::ordered_sum's fixed tree, which single-process training reproduces bit for bit; with
/// ::allreduce it goes to MPI_Iallreduce. MPI progresses only inside MPI calls, so every
/// readiness notification (one per layer during backward) also tests the buckets in flight.
template <class T, class Space>
class GradientBuckets {
 public:
  /// `stage` (the pipeline stage these gradients belong to, -1 if none) only names the buckets
  /// when a wait for one times out (hpf::comm::WaitFor).
  GradientBuckets(comm::Communicator replicas, Buffer<T, Space> gradients, std::size_t bucket_bytes,
                  GradientReduction reduction, int stage = -1)
      : replicas_(std::move(replicas)), gradients_(gradients),
        reduction_(resolve(reduction, static_cast<std::size_t>(replicas_.size()))), stage_(stage) {
    if (reduction_ == GradientReduction::ordered && static_cast<std::size_t>(replicas_.size()) > ordered_sum_max_parts) {
      throw comm::UsageError("hpf: ordered gradient reduction supports up to " + std::to_string(ordered_sum_max_parts) +
                             " replicas; use GradientReduction::allreduce");
    }
    const std::size_t total = gradients.extent(0);
    const std::size_t per_bucket = bucket_bytes / sizeof(T) > 0 ? bucket_bytes / sizeof(T) : 1;
    for (std::size_t end = total; end > 0;) {
      const std::size_t begin = end > per_bucket ? end - per_bucket : 0;
      begins_.push_back(begin);
      ends_.push_back(end);
      end = begin;
    }
    requests_.resize(begins_.size());
    if (reduction_ == GradientReduction::ordered && replicas_.size() > 1) {
      gathered_.resize(begins_.size());
      for (std::size_t b = 0; b < begins_.size(); ++b) {
        gathered_[b] = Buffer<T, Space>("hpf::GradientBuckets::gathered", (ends_[b] - begins_[b]) * replicas_.size());
      }
      summed_.assign(begins_.size(), true);
    }
  }

  /// Call before the backward passes of a step.
  void begin_step() { started_ = 0; }

  /// Every gradient at flat offset >= `offset` is final for this step: start the buckets that
  /// lie entirely above it, and advance the ones in flight.
  void ready(std::size_t offset) {
    if (replicas_.size() == 1) return;
    while (started_ < begins_.size() && begins_[started_] >= offset) start(started_++);
    for (std::size_t b = 0; b < started_; ++b) {
      if (requests_[b].test()) sum_gathered(b);
    }
  }

  /// Starts what is left and waits for every bucket (each at most hpf::comm::wait_limit()):
  /// afterwards gradients hold the sum over replicas.
  void finish() {
    if (replicas_.size() == 1) return;
    trace::Region region("hpf::GradientBuckets::finish");
    {
      const trace::Span posting(trace::Track::wait, "start buckets");  // the thread is inside MPI
      ready(0);
    }
    for (std::size_t b = 0; b < requests_.size(); ++b) {
      trace::wait(requests_[b], "allreduce", tags(b));
      sum_gathered(b);
    }
  }

  std::size_t bucket_count() const { return begins_.size(); }
  /// [begin, end) of bucket b; bucket 0 holds the end of the array.
  std::pair<std::size_t, std::size_t> bucket(std::size_t b) const { return {begins_[b], ends_[b]}; }
  /// Buckets started so far in this step (all of them after finish()).
  std::size_t started() const { return started_; }
  GradientReduction reduction() const { return reduction_; }
  /// What waiting for bucket b waits for: "allreduce of gradient bucket 4 (1.2 MiB) of stage 1
  /// among 2 replicas" (allgather with the ordered reduction).
  comm::WaitFor waiting_for(std::size_t b) const {
    return {.kind = reduction_ == GradientReduction::ordered ? "allgather" : "allreduce", .what = "gradient",
            .group = replicas_.size(), .members = "replicas", .stage = stage_, .bucket = static_cast<int>(b),
            .bytes = static_cast<std::int64_t>((ends_[b] - begins_[b]) * sizeof(T))};
  }

 private:
  auto bucket_view(std::size_t b) const { return Kokkos::subview(gradients_, Kokkos::make_pair(begins_[b], ends_[b])); }
  trace::Tags tags(std::size_t b) const {
    return {.bucket = static_cast<std::int32_t>(b), .bytes = static_cast<std::int64_t>((ends_[b] - begins_[b]) * sizeof(T))};
  }
  void start(std::size_t b) {
    trace::Pending span = trace::Pending::open(trace::Track::collective, "allreduce", tags(b));
    if (reduction_ == GradientReduction::ordered) {
      requests_[b] = comm::iallgather(replicas_, bucket_view(b), gathered_[b], waiting_for(b));
      summed_[b] = false;
    } else {
      requests_[b] = comm::iallreduce(replicas_, bucket_view(b), MPI_SUM, waiting_for(b));
    }
    requests_[b].trace_until_complete(std::move(span));
  }
  /// Ordered reduction of a bucket whose gather has completed (once).
  void sum_gathered(std::size_t b) {
    if (reduction_ != GradientReduction::ordered || summed_[b]) return;
    trace::Span span(trace::Track::compute, "reduce bucket", tags(b));
    const std::size_t length = ends_[b] - begins_[b];
    ordered_sum(Space{}, gathered_[b].data(), static_cast<std::size_t>(replicas_.size()), length,
                gradients_.data() + begins_[b], length);
    summed_[b] = true;
  }

  comm::Communicator replicas_;
  Buffer<T, Space> gradients_;
  GradientReduction reduction_;
  int stage_;
  std::vector<Buffer<T, Space>> gathered_;  // ordered: every replica's copy of each bucket
  std::vector<bool> summed_;
  std::vector<std::size_t> begins_, ends_;
  std::vector<comm::Request> requests_;
  std::size_t started_ = 0;
};

}  // namespace hpf

#endif  // HPF_PARALLEL_GRADIENT_BUCKETS_HPP
