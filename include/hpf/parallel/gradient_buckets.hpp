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
///
/// A replica may train several data shards per step (TrainOptions::shards_per_replica, C): under
/// the ordered reduction each shard's gradient is parked (park()) and every bucket gathers the C
/// parked parts of every replica, so the tree adds all R x C shards in global shard order
/// (shard g = j R + r is part j of replica r), as one process with R x C data shards does. The
/// buckets then start after the last shard, in finish().
template <class T, class Space>
class GradientBuckets {
 public:
  /// `stage` (the pipeline stage these gradients belong to, -1 if none) only names the buckets
  /// when a wait for one times out (hpf::comm::WaitFor).
  /// `shards_per_replica` (C): data shards each replica trains per step.
  GradientBuckets(comm::Communicator replicas, Buffer<T, Space> gradients, std::size_t bucket_bytes,
                  GradientReduction reduction, int stage = -1, std::size_t shards_per_replica = 1)
      : replicas_(std::move(replicas)), gradients_(gradients), parts_(shards_per_replica),
        reduction_(resolve(reduction, static_cast<std::size_t>(replicas_.size()) * parts_)), stage_(stage) {
    if (reduction_ == GradientReduction::ordered && static_cast<std::size_t>(replicas_.size()) * parts_ > ordered_sum_max_parts) {
      throw comm::UsageError("hpf: ordered gradient reduction supports up to " + std::to_string(ordered_sum_max_parts) +
                             " data shards (replicas x shards per replica); use GradientReduction::allreduce");
    }
    const std::size_t total = gradients.extent(0);
    const std::size_t per_bucket = bucket_bytes / sizeof(T) > 0 ? bucket_bytes / sizeof(T) : 1;
    for (std::size_t end = total; end > 0;) {
      const std::size_t begin = end > per_bucket ? end - per_bucket : 0;
      begins_.push_back(begin);
      ends_.push_back(end);
      end = begin;
    }
    requests_.resize(begins_.size() * parts_);
    if (reduction_ == GradientReduction::ordered && shards() > 1) {
      gathered_.resize(begins_.size());
      for (std::size_t b = 0; b < begins_.size(); ++b) {
        gathered_[b] = Buffer<T, Space>("hpf::GradientBuckets::gathered", (ends_[b] - begins_[b]) * shards());
      }
      summed_.assign(begins_.size(), true);
      if (parts_ > 1) parked_ = Buffer<T, Space>("hpf::GradientBuckets::parked", total * parts_);
    }
  }

  /// Whether backward may start buckets (ready()): only while each replica trains one shard.
  bool overlaps_backward() const { return parts_ == 1 && replicas_.size() > 1; }
  /// Parks the gradient of this replica's shard `j` (of C; ordered reduction with C > 1, else
  /// nothing: with ::allreduce the shards accumulate in the gradient). Safe for different shards
  /// at once.
  void park(std::size_t j, const Buffer<T, Space>& gradients) {
    if (parked_.extent(0) == 0) return;
    const std::size_t total = gradients_.extent(0);
    Kokkos::deep_copy(Kokkos::subview(parked_, Kokkos::make_pair(j * total, (j + 1) * total)), gradients);
  }
  /// Whether parked shards replace the gradient: then a replica's shards after the first start
  /// from zero gradients.
  bool parks() const { return parked_.extent(0) > 0; }

  /// Call before the backward passes of a step.
  void begin_step() { started_ = 0; }

  /// Every gradient at flat offset >= `offset` is final for this step: start the buckets that
  /// lie entirely above it, and advance the ones in flight.
  void ready(std::size_t offset) {
    if (shards() == 1) return;
    while (started_ < begins_.size() && begins_[started_] >= offset) start(started_++);
    for (std::size_t b = 0; b < started_; ++b) {
      if (bucket_arrived(b)) sum_gathered(b);
    }
  }

  /// Starts what is left and waits for every bucket (each at most hpf::comm::wait_limit()):
  /// afterwards gradients hold the sum over replicas (and their shards).
  void finish() {
    if (shards() == 1) return;
    trace::Region region("hpf::GradientBuckets::finish");
    {
      const trace::Span posting(trace::Track::wait, "start buckets");  // the thread is inside MPI
      ready(0);
    }
    for (std::size_t b = 0; b < begins_.size(); ++b) {
      for (std::size_t j = 0; j < parts_; ++j) trace::wait(requests_[b * parts_ + j], "allreduce", tags(b));
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
  std::size_t shards() const { return static_cast<std::size_t>(replicas_.size()) * parts_; }
  bool bucket_arrived(std::size_t b) {
    bool all = true;
    for (std::size_t j = 0; j < parts_; ++j) all = requests_[b * parts_ + j].test() && all;  // tests every part
    return all;
  }
  void start(std::size_t b) {
    if (reduction_ != GradientReduction::ordered) {
      trace::Pending span = trace::Pending::open(trace::Track::collective, "allreduce", tags(b));
      requests_[b * parts_] = comm::iallreduce(replicas_, bucket_view(b), MPI_SUM, waiting_for(b));
      requests_[b * parts_].trace_until_complete(std::move(span));
      return;
    }
    // Part j of every replica lands in block j of the gathered bucket: shard g = j R + r at g.
    // One span per bucket, closed when its last part's gather is seen complete.
    trace::Pending span = trace::Pending::open(trace::Track::collective, "allreduce", tags(b));
    const std::size_t length = ends_[b] - begins_[b], total = gradients_.extent(0), replicas = replicas_.size();
    for (std::size_t j = 0; j < parts_; ++j) {
      const auto part = parts_ == 1 ? bucket_view(b)
                                    : Kokkos::subview(parked_, Kokkos::make_pair(j * total + begins_[b], j * total + ends_[b]));
      const auto into = Kokkos::subview(gathered_[b], Kokkos::make_pair(j * replicas * length, (j + 1) * replicas * length));
      requests_[b * parts_ + j] = comm::iallgather(replicas_, part, into, waiting_for(b));
    }
    requests_[b * parts_ + parts_ - 1].trace_until_complete(std::move(span));
    summed_[b] = false;
  }
  /// Ordered reduction of a bucket whose gathers have completed (once).
  void sum_gathered(std::size_t b) {
    if (reduction_ != GradientReduction::ordered || summed_[b]) return;
    trace::Span span(trace::Track::compute, "reduce bucket", tags(b));
    const std::size_t length = ends_[b] - begins_[b];
    ordered_sum(Space{}, gathered_[b].data(), shards(), length, gradients_.data() + begins_[b], length);
    summed_[b] = true;
  }

  comm::Communicator replicas_;
  Buffer<T, Space> gradients_;
  std::size_t parts_;  // data shards per replica (C)
  GradientReduction reduction_;
  int stage_;
  std::vector<Buffer<T, Space>> gathered_;  // ordered: every shard's copy of each bucket, in shard order
  Buffer<T, Space> parked_;                  // ordered with C > 1: this replica's C shard gradients
  std::vector<bool> summed_;
  std::vector<std::size_t> begins_, ends_;
  std::vector<comm::Request> requests_;
  std::size_t started_ = 0;
};

}  // namespace hpf

#endif  // HPF_PARALLEL_GRADIENT_BUCKETS_HPP
