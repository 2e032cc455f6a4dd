// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_GRADIENT_BUCKETS_HPP
#define HPF_PARALLEL_GRADIENT_BUCKETS_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/host_groups.hpp>
#include <hpf/comm/request.hpp>
#include <hpf/comm/transfer.hpp>
#include <hpf/comm/watchdog.hpp>
#include <hpf/tensor/bf16_arrays.hpp>
#include <hpf/tensor/ordered_sum.hpp>
#include <hpf/parallel/gradient_reduction.hpp>
#include <hpf/parallel/phased_exchange.hpp>
#include <hpf/tensor/views.hpp>
#include <hpf/trace/region.hpp>
#include <hpf/trace/span.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
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
/// A bucket may travel in pieces (fixed sub-ranges, each its own collective, summed as it
/// arrives): the same tree per element, so the same bits.
///
/// With HostHierarchy::on (by default when the replicas span hosts and share some) each piece
/// goes through a PhasedExchange: summed inside each host first, exchanged among one leader per
/// host, broadcast back; for the ordered reduction only where that keeps the same tree. The
/// ordered reduction among 3 or more replicas (or leaders) also goes through it, scattered and
/// collected: each replica receives 2 (R - 1) / R of a bucket instead of R - 1 copies.
///
/// A replica may train several data shards per step (TrainOptions::shards_per_replica, C): under
/// the ordered reduction each shard's gradient is parked (park()) and every bucket gathers the C
/// parked parts of every replica, so the tree adds all R x C shards in global shard order
/// (shard g = j R + r is part j of replica r), as one process with R x C data shards does. The
/// buckets then start after the last shard, in finish().
///
/// With ExchangePrecision::bf16 every shard's gradient is rounded to bf16 before the tree adds
/// it and the sum is rounded once more (PhasedExchange says which messages are bf16); parked
/// shards are rounded where they are parked and travel as float, for the same bits.
template <class T, class Space>
class GradientBuckets {
 public:
  /// `stage` (the pipeline stage these gradients belong to, -1 if none) only names the buckets
  /// when a wait for one times out (hpf::comm::WaitFor).
  /// `shards_per_replica` (C): data shards each replica trains per step.
  /// `piece_bytes`: each bucket travels in messages of at most this many bytes (0: one message
  /// per bucket; StepOptions::exchange_piece_bytes says why).
  /// `hierarchy`: whether replicas on one host combine first (collective over `replicas`).
  /// `precision`: what gradients travel as (ExchangePrecision::bf16: float, ordered reduction).
  GradientBuckets(comm::Communicator replicas, Buffer<T, Space> gradients, std::size_t bucket_bytes,
                  GradientReduction reduction, int stage = -1, std::size_t shards_per_replica = 1,
                  std::size_t piece_bytes = 0, HostHierarchy hierarchy = HostHierarchy::off,
                  ExchangePrecision precision = ExchangePrecision::full)
      : replicas_(std::move(replicas)), gradients_(gradients), parts_(shards_per_replica),
        reduction_(resolve(reduction, static_cast<std::size_t>(replicas_.size()) * parts_)), stage_(stage),
        bf16_(precision == ExchangePrecision::bf16 && shards() > 1) {
    if (bf16_ && (!std::is_same_v<T, float> || reduction_ != GradientReduction::ordered)) {
      throw std::invalid_argument("hpf: a bf16 gradient exchange needs float gradients and the ordered reduction");
    }
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
    const std::size_t per_piece = piece_bytes / sizeof(T) > 0 ? piece_bytes / sizeof(T) : 1;
    for (std::size_t b = 0; b < begins_.size(); ++b) {
      first_piece_.push_back(piece_begins_.size());
      const std::size_t step = piece_bytes > 0 ? per_piece : ends_[b] - begins_[b];
      for (std::size_t begin = begins_[b]; begin < ends_[b]; begin += step) piece_begins_.push_back(begin);
    }
    first_piece_.push_back(piece_begins_.size());
    requests_.resize(piece_begins_.size() * parts_);
    choose_exchange(hierarchy);
    if (reduction_ == GradientReduction::ordered && shards() > 1 && !phased_) {
      gathered_.resize(begins_.size());
      for (std::size_t b = 0; b < begins_.size(); ++b) {
        gathered_[b] = Buffer<T, Space>("hpf::GradientBuckets::gathered", (ends_[b] - begins_[b]) * shards());
      }
      summed_.assign(piece_begins_.size(), true);
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
  void begin_step() {
    started_ = 0;
    if (phased_) phased_->reset();
  }

  /// Every gradient at flat offset >= `offset` is final for this step: start the buckets that
  /// lie entirely above it, and advance the ones in flight.
  void ready(std::size_t offset) {
    if (shards() == 1) return;
    while (started_ < begins_.size() && begins_[started_] >= offset) start(started_++);
    if (phased_) {
      phased_->progress();
      return;
    }
    for (std::size_t k = 0; k < first_piece_[started_]; ++k) {
      if (piece_arrived(k)) sum_gathered(k);
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
    if (phased_) {
      phased_->finish();
      return;
    }
    for (std::size_t b = 0; b < begins_.size(); ++b) {
      for (std::size_t k = first_piece_[b]; k < first_piece_[b + 1]; ++k) {
        for (std::size_t j = 0; j < parts_; ++j) trace::wait(requests_[k * parts_ + j], "allreduce", tags(b));
        sum_gathered(k);
      }
    }
  }

  std::size_t bucket_count() const { return begins_.size(); }
  /// [begin, end) of bucket b; bucket 0 holds the end of the array.
  std::pair<std::size_t, std::size_t> bucket(std::size_t b) const { return {begins_[b], ends_[b]}; }
  /// Messages bucket b travels in (per part each replica sends).
  std::size_t pieces(std::size_t b) const { return first_piece_[b + 1] - first_piece_[b]; }
  /// Buckets started so far in this step (all of them after finish()).
  std::size_t started() const { return started_; }
  GradientReduction reduction() const { return reduction_; }
  /// How buckets cross hosts, for the log: "summed per host first (2 hosts x 2 ranks)", "flat:
  /// ..." where a hierarchy was asked for or would apply but cannot keep the ordered tree, or
  /// empty (flat, nothing to say).
  const std::string& hierarchy() const { return hierarchy_note_; }
  /// Whether gradients travel as bf16 (ExchangePrecision::bf16 with more than one shard).
  bool in_bf16() const { return bf16_; }
  /// Whether buckets are summed per host first.
  bool summed_per_host() const { return phased_ && phased_->summed_per_host(); }
  /// What waiting for bucket b waits for: "allreduce of gradient bucket 4 (1.2 MiB) of stage 1
  /// among 2 replicas" (allgather with the ordered reduction).
  comm::WaitFor waiting_for(std::size_t b) const {
    return {.kind = reduction_ == GradientReduction::ordered ? "allgather" : "allreduce", .what = "gradient",
            .group = replicas_.size(), .members = "replicas", .stage = stage_, .bucket = static_cast<int>(b),
            .bytes = static_cast<std::int64_t>((ends_[b] - begins_[b]) * wire_element())};
  }

 private:
  trace::Tags tags(std::size_t b) const {
    return {.bucket = static_cast<std::int32_t>(b), .bytes = static_cast<std::int64_t>((ends_[b] - begins_[b]) * wire_element())};
  }
  /// Bytes per gradient value on the wire (parked shards, rounded, travel as T).
  std::size_t wire_element() const { return bf16_ && parts_ == 1 ? sizeof(bf16_bits) : sizeof(T); }
  std::size_t shards() const { return static_cast<std::size_t>(replicas_.size()) * parts_; }
  /// Piece k: [piece_begins_[k], piece_end(k)) of the flat array, within its bucket.
  std::size_t piece_end(std::size_t k) const {
    const std::size_t b = bucket_of(k);
    return k + 1 < first_piece_[b + 1] ? piece_begins_[k + 1] : ends_[b];
  }
  std::size_t bucket_of(std::size_t k) const {
    return static_cast<std::size_t>(std::upper_bound(first_piece_.begin(), first_piece_.end(), k) - first_piece_.begin()) - 1;
  }
  bool piece_arrived(std::size_t k) {
    bool all = true;
    for (std::size_t j = 0; j < parts_; ++j) all = requests_[k * parts_ + j].test() && all;  // tests every part
    return all;
  }
  /// Decides whether pieces go through a PhasedExchange, and whether it sums per host first
  /// (the same answer on every replica).
  void choose_exchange(HostHierarchy asked) {
    if (shards() == 1) return;
    if (parts_ > 1) {  // parked shards: one allgather per part
      if (asked == HostHierarchy::on) hierarchy_note_ = "flat: several data shards per replica";
      return;
    }
    std::optional<comm::HostGroups> hosts;
    if (asked != HostHierarchy::off) {
      hosts = comm::HostGroups::of(replicas_);
      if (hosts->largest_host == 1 || (asked == HostHierarchy::automatic && hosts->hosts == 1)) {
        hosts.reset();
      } else if (reduction_ == GradientReduction::ordered && !hosts->aligned) {
        hierarchy_note_ = "flat: the ordered reduction sums per host only where host h holds replicas [h L, h L + L) for "
                          "a power of two L (" + hosts->describe() + ")";
        hosts.reset();
      } else {
        hierarchy_note_ = "summed per host first (" + hosts->describe() + ")";
      }
    }
    // Flat among 2 under the ordered reduction: one allgather here, unless it travels as bf16.
    if (!hosts && (reduction_ != GradientReduction::ordered || (replicas_.size() < 3 && !bf16_))) return;
    std::vector<std::pair<std::size_t, std::size_t>> pieces;
    for (std::size_t k = 0; k < piece_begins_.size(); ++k) pieces.emplace_back(piece_begins_[k], piece_end(k));
    phased_.emplace(replicas_, std::move(hosts), gradients_, reduction_, std::move(pieces),
                    bf16_ ? ExchangePrecision::bf16 : ExchangePrecision::full);
  }
  void start(std::size_t b) {
    // One span per bucket, closed when its last piece's last part is seen complete.
    trace::Pending span = trace::Pending::open(trace::Track::collective, "allreduce", tags(b));
    const std::size_t last = first_piece_[b + 1] - 1;
    if (phased_) {
      for (std::size_t k = first_piece_[b]; k <= last; ++k) {
        phased_->start(k, waiting_for(b), k == last ? std::move(span) : trace::Pending{});
      }
      return;
    }
    if (reduction_ != GradientReduction::ordered) {
      for (std::size_t k = first_piece_[b]; k <= last; ++k) {
        const auto piece = Kokkos::subview(gradients_, Kokkos::make_pair(piece_begins_[k], piece_end(k)));
        requests_[k * parts_] = comm::iallreduce(replicas_, piece, MPI_SUM, waiting_for(b));
      }
      requests_[last * parts_].trace_until_complete(std::move(span));
      return;
    }
    // Piece k of part j of every replica lands in the piece's block of the gathered bucket, shard
    // g = j R + r at position g: the piece's shards one after another, as ordered_sum reads them.
    const std::size_t total = gradients_.extent(0), replicas = replicas_.size();
    for (std::size_t k = first_piece_[b]; k <= last; ++k) {
      const std::size_t begin = piece_begins_[k], length = piece_end(k) - begin;
      const std::size_t block = (begin - begins_[b]) * shards();
      for (std::size_t j = 0; j < parts_; ++j) {
        const auto part = parts_ == 1 ? Kokkos::subview(gradients_, Kokkos::make_pair(begin, begin + length))
                                      : Kokkos::subview(parked_, Kokkos::make_pair(j * total + begin, j * total + begin + length));
        const auto into = Kokkos::subview(gathered_[b], Kokkos::make_pair(block + j * replicas * length,
                                                                          block + (j + 1) * replicas * length));
        if constexpr (std::is_same_v<T, float>) {
          if (bf16_) round_to_bf16_in_place(Space{}, part.data(), length);  // parked: its own copy, rounded once
        }
        requests_[k * parts_ + j] = comm::iallgather(replicas_, part, into, waiting_for(b));
      }
      summed_[k] = false;
    }
    requests_[last * parts_ + parts_ - 1].trace_until_complete(std::move(span));
  }
  /// Ordered reduction of a piece whose gathers have completed (once).
  void sum_gathered(std::size_t k) {
    if (reduction_ != GradientReduction::ordered || summed_[k]) return;
    const std::size_t b = bucket_of(k), begin = piece_begins_[k], length = piece_end(k) - begin;
    trace::Span span(trace::Track::compute, "reduce bucket", tags(b));
    ordered_sum(Space{}, gathered_[b].data() + (begin - begins_[b]) * shards(), shards(), length,
                gradients_.data() + begin, length);
    if constexpr (std::is_same_v<T, float>) {
      if (bf16_) round_to_bf16_in_place(Space{}, gradients_.data() + begin, length);
    }
    summed_[k] = true;
  }

  comm::Communicator replicas_;
  Buffer<T, Space> gradients_;
  std::size_t parts_;  // data shards per replica (C)
  GradientReduction reduction_;
  int stage_;
  bool bf16_;  // ExchangePrecision::bf16
  std::vector<Buffer<T, Space>> gathered_;  // ordered: every shard's copy of each bucket, in shard order
  Buffer<T, Space> parked_;                  // ordered with C > 1: this replica's C shard gradients
  std::vector<bool> summed_;                 // by piece
  std::vector<std::size_t> begins_, ends_;
  std::vector<std::size_t> piece_begins_;    // every bucket's pieces, bucket by bucket
  std::vector<std::size_t> first_piece_;     // bucket b's pieces: [first_piece_[b], first_piece_[b + 1])
  std::vector<comm::Request> requests_;
  std::size_t started_ = 0;
  std::optional<PhasedExchange<T, Space>> phased_;  // scattered and collected, or summed per host first
  std::string hierarchy_note_;
};

}  // namespace hpf

#endif  // HPF_PARALLEL_GRADIENT_BUCKETS_HPP
