// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_MPI_LINKS_HPP
#define HPF_PARALLEL_MPI_LINKS_HPP

#include <hpf/comm/agreement.hpp>
#include <hpf/comm/clock_offset.hpp>
#include <hpf/comm/gather_text.hpp>
#include <hpf/comm/progress_thread.hpp>
#include <hpf/comm/request.hpp>
#include <hpf/comm/transfer.hpp>
#include <hpf/comm/watchdog.hpp>
#include <hpf/data/shard.hpp>
#include <hpf/parallel/gradient_buckets.hpp>
#include <hpf/parallel/grid.hpp>
#include <hpf/parallel/step_options.hpp>
#include <hpf/tensor/bf16_arrays.hpp>
#include <hpf/tensor/views.hpp>
#include <hpf/trace/chrome_trace.hpp>
#include <hpf/trace/clock.hpp>
#include <hpf/trace/span.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace hpf {

namespace detail {
/// What a pipeline transfer of stage `stage` with `tag` carries, for hpf::comm::WaitFor. The
/// tags are StageEngine's: 2m for the activation of micro-batch m, 2m + 1 for its gradient (m
/// modulo 8192), 1 << 14 for evaluation activations.
inline comm::WaitFor pipeline_transfer(std::size_t stage, int tag) {
  comm::WaitFor w{.stage = static_cast<int>(stage)};
  if (tag == 1 << 14) {
    w.what = "evaluation activation";
  } else {
    w.what = tag % 2 == 0 ? "activation" : "gradient";
    w.micro_batch = tag / 2;
  }
  return w;
}
}  // namespace detail

/// \brief What a StageEngine of one rank in a ProcessGrid talks through: its neighbouring
/// stages (activations and their gradients) and the replicas of its stage (parameter
/// gradients, buffers). LocalLinks is the one-process counterpart of every member.
/// - gradients: reduced in buckets while backward runs (GradientBuckets);
/// - buffers (BatchNorm running statistics): replica 0's, broadcast after every step, as
///   PyTorch's DistributedDataParallel does, so every replica holds the same model;
/// - the step's loss: every replica's sum, added in replica order.
/// A replica may train C data shards per step (TrainOptions::shards_per_replica): replica r of R
/// trains the sampler's shards r, r + R, ..., r + (C - 1) R (its data shard holds their samples),
/// one after another or, with one stage, side by side on its threads; gradients, buffers and loss
/// then combine the R x C shards as one process with R x C data shards does (LocalLinks).
/// Every wait lasts at most hpf::comm::wait_limit() and then ends the job, saying which stage,
/// micro-batch, bucket or collective it waited for (hpf/comm/watchdog.hpp).
template <class T, class Space>
class MpiLinks {
 public:
  /// This rank's place in the grid, the data shards each replica trains per step
  /// (TrainOptions::shards_per_replica) and whether it trains them side by side on its threads
  /// (TrainOptions::shards_side_by_side). The grid must outlive the links.
  struct Placement {
    // Implicit: a grid alone places one shard per replica.
    Placement(const ProcessGrid& g, std::size_t shards = 1, bool side_by_side = false)  // NOLINT(google-explicit-constructor)
        : grid(&g), shards_per_replica(shards), side_by_side(side_by_side) {}
    const ProcessGrid* grid;
    std::size_t shards_per_replica;
    bool side_by_side;
  };
  using request = comm::Request;
  /// The sampler's data shards: R x C.
  static std::size_t replicas_of(const Placement& placement) {
    return placement.grid->replicas() * placement.shards_per_replica;
  }

  MpiLinks(const Placement& placement, Buffer<T, Space> gradients, Buffer<T, Space> buffers, const StepOptions& options)
      : grid_(*placement.grid), gradients_(gradients), buffers_(buffers),
        bucket_bytes_(choose_bucket_bytes(options.bucket_bytes, gradients.extent(0) * sizeof(T), options.exchange_cost)),
        bucket_size_(describe_bucket_bytes(options.bucket_bytes, gradients.extent(0) * sizeof(T), options.exchange_cost,
                                           bucket_bytes_)),
        buckets_(grid_.stage_group(), gradients, bucket_bytes_, options.reduction, static_cast<int>(grid_.stage()),
                 placement.shards_per_replica, exchange_piece_bytes(grid_.stage_group(), options), options.hierarchy,
                 options.exchange_precision),
        side_by_side_(placement.side_by_side && grid_.stages() == 1 && grid_.group_size() == 1 && buckets_.parks()) {
    if (grid_.stages() > 1) {  // activations and their gradients in pieces to a stage on another host
      stage_bf16_ = std::is_same_v<T, float> && options.stage_precision == ExchangePrecision::bf16;
      const std::vector<bool> near = grid_.pipeline().ranks_on_this_host();
      const auto piece = [&](std::size_t peer) {
        const std::size_t bytes = piece_bytes(near[peer], options);
        return bytes == 0 ? 0 : std::max<std::size_t>(1, bytes / stage_element_bytes());
      };
      if (grid_.stage() > 0) previous_piece_ = piece(grid_.stage() - 1);
      if (grid_.stage() + 1 < grid_.stages()) next_piece_ = piece(grid_.stage() + 1);
    }
    if (options.exchange_progress == ExchangeProgress::thread && grid_.world().size() > 1) {
      std::string why_not;
      if (auto made = comm::ProgressThread::make(grid_.world(), options.exchange_progress_interval, why_not)) progress_.emplace(std::move(*made));
      const std::string every = std::to_string(options.exchange_progress_interval.count());
      progress_note_ = progress_ ? "a thread per rank calls into MPI every " + every + " us" : "between layers only: " + why_not;
    }
    for (std::size_t j = 0; j < placement.shards_per_replica; ++j) shards_.push_back(grid_.replica() + j * grid_.replicas());
    if (shards_.size() > 1 && buffers_.extent(0) > 0) {
      shard0_buffers_ = Buffer<T, Space>("hpf::MpiLinks::shard0_buffers", buffers_.extent(0));
    }
  }

  std::size_t stages() const { return grid_.stages(); }
  std::size_t stage() const { return grid_.stage(); }
  /// Data shards of the sampler: R x C.
  std::size_t replicas() const { return grid_.replicas() * shards_.size(); }
  /// The sampler's shards this rank trains in each step, in order.
  std::span<const std::size_t> shards() const { return shards_; }
  /// Whether the shards train side by side, each with a network of its own (see Placement):
  /// with one stage, no layer split (its collectives belong to one thread), several shards and
  /// their gradients parked (the ordered reduction).
  bool shards_side_by_side() const { return side_by_side_; }
  data::Shard evaluation_shard() const { return {grid_.replica(), grid_.replicas()}; }
  const ProcessGrid& grid() const { return grid_; }

  // Messages between stages, all posted without waiting: the engine posts receives ahead of the
  // passes before them (hpf::receive_posting) and waits where the program needs the data. Under
  // StepOptions::stage_precision bf16 they travel as bf16 copies, decoded on arrival.
  template <class View>
  request receive_from_previous(const View& v, int tag) const {
    return receive(v, grid_.stage() - 1, tag, previous_piece_);
  }
  template <class View>
  request receive_from_next(const View& v, int tag) const {
    return receive(v, grid_.stage() + 1, tag, next_piece_);
  }
  template <class View>
  request send_to_next(const View& v, int tag) const {
    return send(v, grid_.stage() + 1, tag, next_piece_);
  }
  template <class View>
  request send_to_previous(const View& v, int tag) const {
    return send(v, grid_.stage() - 1, tag, previous_piece_);
  }
  /// Bytes per element of the messages between stages: 2 where they travel as bf16.
  std::size_t stage_element_bytes() const { return stage_bf16_ ? sizeof(bf16_bits) : sizeof(T); }

  // The timeline's collective parts (hpf::Timeline).
  trace::ClockSample clock_sample() const { return comm::measure_clock_offset(grid_.world()); }
  trace::ProcessFacts trace_facts() const {
    return {.rank = grid_.world().rank(), .stage = static_cast<int>(grid_.stage()), .replica = static_cast<int>(grid_.replica()),
            .buckets = replicas() > 1 ? buckets_.bucket_count() : 0};
  }
  std::vector<std::string> gather_on_first(const std::string& part) const { return comm::gather_text(grid_.world(), part); }

  // A checkpoint's parts (hpf::Checkpointer): each stage's first replica (its group's first
  // member: every member holds the whole stage) writes the stage; a failure anywhere fails every
  // rank (comm::agree).
  bool first_process() const { return grid_.world().rank() == 0; }
  bool writes_stage() const { return grid_.replica() == 0 && grid_.member() == 0; }
  template <class F>
  auto agree(F&& f) const {
    return comm::agree(grid_.world(), std::forward<F>(f));
  }
  std::string share_from_first(std::string text) const { return comm::broadcast_text(grid_.world(), std::move(text), 0); }

  void begin_step() {
    if (progress_) progress_->activate();
    buckets_.begin_step();
  }
  /// Starts the buckets backward has finished (overlapping the rest of backward; not while a
  /// replica trains several shards, whose sum is final only after the last).
  std::function<void(std::size_t)> gradients_ready() {
    if (!buckets_.overlaps_backward()) return {};
    return [this](std::size_t offset) { buckets_.ready(offset); };
  }
  /// This rank's shard `k` (of shards()) has finished its backward passes in the network these
  /// links were made with.
  void shard_done(std::size_t k) {
    park(k, gradients_, buffers_);
    if (buckets_.parks() && k + 1 < shards_.size()) Kokkos::deep_copy(gradients_, T(0));
  }
  /// Shard `k` has finished its backward passes in a network of its own (shards side by side),
  /// with `gradients` and `buffers`. Safe for different shards at once.
  void shard_done(std::size_t k, const Buffer<T, Space>& gradients, const Buffer<T, Space>& buffers) {
    park(k, gradients, buffers);
  }
  void finish_gradients() {
    buckets_.finish();
    if (progress_) progress_->deactivate();  // what is left (the last sends) the engine waits for
  }
  void share_buffers() {
    if (shard0_buffers_.extent(0) > 0) Kokkos::deep_copy(buffers_, shard0_buffers_);
    if (grid_.replicas() == 1 || buffers_.extent(0) == 0) return;
    trace::Blocking span(trace::Track::collective, "broadcast buffers",
                         {.stage = static_cast<std::int32_t>(grid_.stage()), .bytes = static_cast<std::int64_t>(buffers_.size() * sizeof(T))});
    comm::broadcast(grid_.stage_group(), buffers_, 0,
                    {.what = "buffers", .members = "replicas", .stage = static_cast<int>(grid_.stage())});
  }
  /// The step's loss on every rank: the last stages' sums per shard (`per_shard`, one per shards()
  /// entry) added in shard order; NaN when any rank's gradients are not finite
  /// (`gradients_finite` false), so every rank sees it alike.
  double total_loss(std::span<const double> per_shard, bool holds_loss, bool gradients_finite = true) const {
    trace::Blocking span(trace::Track::collective, "allgather loss", {.stage = static_cast<std::int32_t>(grid_.stage())});
    return sum_in_shard_order(per_shard, holds_loss, gradients_finite);
  }
  /// Totals of an evaluation (summed loss, correct samples) over replicas, on every rank (a
  /// group's members evaluate alike: its first member's count).
  std::pair<double, std::size_t> total_evaluation(double loss, std::size_t correct, bool holds_result) const {
    const double total_loss = sum_in_shard_order({&loss, 1}, holds_result, true);
    const bool counts = holds_result && grid_.member() == 0;
    const auto all = comm::allreduce_value(grid_.world(), static_cast<unsigned long long>(counts ? correct : 0),
                                           MPI_SUM, {.what = "the evaluation's correct samples"});
    return {total_loss, static_cast<std::size_t>(all)};
  }

  /// Bytes per message to peers on this host or not (0: whole messages): StepOptions'
  /// exchange_piece_bytes between hosts, and on one host when pieces_on_one_host says so.
  static std::size_t piece_bytes(bool on_this_host, const StepOptions& options) {
    return on_this_host && !options.pieces_on_one_host ? 0 : options.exchange_piece_bytes;
  }
  /// piece_bytes of the gradient exchange among `replicas` (whether they span hosts is the same
  /// on each of them). Collective over `replicas`.
  static std::size_t exchange_piece_bytes(const comm::Communicator& replicas, const StepOptions& options) {
    if (replicas.size() <= 1 || options.exchange_piece_bytes == 0) return 0;
    return piece_bytes(!replicas.spans_hosts(), options);
  }
  /// Elements per message to the previous and the next stage (0: whole messages; they are on this
  /// host, or there is none).
  std::size_t previous_piece_elements() const { return previous_piece_; }
  std::size_t next_piece_elements() const { return next_piece_; }
  /// This stage's gradient buckets, how their size was chosen and how they cross hosts, for the
  /// log: "stage 0: 9 buckets of 120 KiB (automatic: ...), summed per host first (2 hosts x 2
  /// ranks)", then ", exchanged as bf16" where they travel so; empty without replicas to exchange with.
  std::string describe_gradient_exchange() const {
    if (replicas() <= 1) return {};
    const std::size_t n = buckets_.bucket_count();
    const std::string& hierarchy = buckets_.hierarchy();
    return "stage " + std::to_string(grid_.stage()) + ": " + std::to_string(n) + (n == 1 ? " bucket of " : " buckets of ") +
           bucket_size_ + (hierarchy.empty() ? "" : ", " + hierarchy) + (buckets_.in_bf16() ? ", exchanged as bf16" : "");
  }
  /// How messages in flight progress, for the log, where StepOptions::exchange_progress asked for
  /// a thread: "a thread per rank calls into MPI every 1000 us", or "between layers only: " and why.
  const std::string& describe_progress() const { return progress_note_; }
  /// Whether a progress thread runs beside this rank's training thread.
  bool has_progress_thread() const { return progress_.has_value(); }
  /// The progress thread's calls into MPI so far, the ones owed to its activations included (it
  /// waits up to a second for those), and the seconds spent in them (zeros without one).
  std::pair<std::uint64_t, double> progress_work() const {
    if (!progress_) return {0, 0.0};
    progress_->settle(std::chrono::seconds(1));
    return {progress_->probes(), progress_->probe_seconds()};
  }
  /// Whether this stage's gradient buckets are summed per host first (StepOptions::hierarchy).
  bool summed_per_host() const { return buckets_.summed_per_host(); }
  /// Bytes per gradient bucket of this stage (StepOptions::bucket_bytes, chosen when automatic).
  std::size_t bucket_bytes() const { return bucket_bytes_; }
  /// Messages each gradient bucket travels in (1 each: whole buckets).
  std::vector<std::size_t> bucket_pieces() const {
    std::vector<std::size_t> pieces;
    for (std::size_t b = 0; b < buckets_.bucket_count(); ++b) pieces.push_back(buckets_.pieces(b));
    return pieces;
  }

 private:
  using Bf16Message = Kokkos::View<bf16_bits*, memory_space_t<Space>>;
  /// The bf16 copy of `v` travels in: a buffer of the pool that no request holds any more (the
  /// pool's reference is its only one), or a new one. Messages reuse buffers instead of allocating
  /// one per micro-batch. Returns the buffer to keep alive until the request completes, and its
  /// first v.size() elements.
  template <class View>
  std::pair<std::shared_ptr<Bf16Message>, Bf16Message> bf16_message_for(const View& v) const {
    if (!v.span_is_contiguous()) throw std::invalid_argument("hpf::MpiLinks: a bf16 message between stages needs a contiguous view");
    const std::size_t n = v.size();
    auto free = std::find_if(bf16_pool_.begin(), bf16_pool_.end(),
                             [n](const auto& m) { return m.use_count() == 1 && m->extent(0) >= n; });
    if (free == bf16_pool_.end()) {
      bf16_pool_.push_back(std::make_shared<Bf16Message>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "hpf::MpiLinks::bf16_message"), n));
      free = bf16_pool_.end() - 1;
    }
    return {*free, Kokkos::subview(**free, Kokkos::make_pair(std::size_t{0}, n))};
  }
  template <class View>
  request send(const View& v, std::size_t stage, int tag, std::size_t piece) const {
    const comm::WaitFor what = detail::pipeline_transfer(grid_.stage(), tag);
    if constexpr (std::is_same_v<T, float>) {
      if (stage_bf16_) {
        auto [held, message] = bf16_message_for(v);
        encode_bf16(Space{}, v.data(), message.data(), v.size());
        request sent = comm::isend(grid_.pipeline(), message, static_cast<int>(stage), tag, what, piece);
        sent.then(std::move(held));  // the copy stays until sent
        return sent;
      }
    }
    return comm::isend(grid_.pipeline(), v, static_cast<int>(stage), tag, what, piece);
  }
  template <class View>
  request receive(const View& v, std::size_t stage, int tag, std::size_t piece) const {
    const comm::WaitFor what = detail::pipeline_transfer(grid_.stage(), tag);
    if constexpr (std::is_same_v<T, float>) {
      if (stage_bf16_) {
        auto [held, message] = bf16_message_for(v);
        request received = comm::irecv(grid_.pipeline(), message, static_cast<int>(stage), tag, what, piece);
        received.then(std::move(held), [bits = message.data(), target = v.data(), n = v.size()] { decode_bf16(Space{}, bits, target, n); });
        return received;
      }
    }
    return comm::irecv(grid_.pipeline(), v, static_cast<int>(stage), tag, what, piece);
  }

  /// Parks shard k's gradient (GradientBuckets::park) and, for shard 0 of several, its buffers
  /// (replica 0's shard 0 holds the buffers every replica keeps).
  void park(std::size_t k, const Buffer<T, Space>& gradients, const Buffer<T, Space>& buffers) {
    buckets_.park(k, gradients);
    if (k == 0 && shard0_buffers_.extent(0) > 0) Kokkos::deep_copy(shard0_buffers_, buffers);
  }
  /// The sum over the last stages of every rank's `mine` (part j of replica r is shard j R + r),
  /// added in shard order; NaN on every rank when any value is not finite or `finite` is false
  /// anywhere.
  double sum_in_shard_order(std::span<const double> mine, bool holds, bool finite) const {
    const std::size_t parts = mine.size(), replicas = grid_.replicas();
    std::vector<double> sent(parts), all(parts * static_cast<std::size_t>(grid_.world().size()));  // all[rank * parts + j]
    for (std::size_t j = 0; j < parts; ++j) sent[j] = !finite ? NAN : holds ? mine[j] : 0.0;
    using HostValues = Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    comm::iallgather(grid_.world(), HostValues(sent.data(), parts), HostValues(all.data(), all.size()), {.what = "the loss"})
        .wait();
    double total = 0;
    for (std::size_t g = 0; g < replicas * parts; ++g) {
      total += all[static_cast<std::size_t>(grid_.rank_of(g % replicas, grid_.stages() - 1)) * parts + g / replicas];
    }
    for (const double v : all) {
      if (v - v != 0.0) return NAN;
    }
    return total;
  }

  const ProcessGrid& grid_;
  Buffer<T, Space> gradients_, buffers_;
  std::size_t bucket_bytes_;
  std::string bucket_size_;  // and how it was chosen (describe_bucket_bytes)
  GradientBuckets<T, Space> buckets_;
  bool side_by_side_;
  bool stage_bf16_ = false;  // messages between stages as bf16 (StepOptions::stage_precision)
  mutable std::vector<std::shared_ptr<Bf16Message>> bf16_pool_;  // their buffers (bf16_message_for)
  std::size_t previous_piece_ = 0, next_piece_ = 0;  // elements per message between stages (0: whole)
  std::vector<std::size_t> shards_;
  Buffer<T, Space> shard0_buffers_;  // several shards per replica: shard 0's buffers
  std::string progress_note_;          // describe_progress()
  std::optional<comm::ProgressThread> progress_;  // last: stops before the communicators go
};

}  // namespace hpf

#endif  // HPF_PARALLEL_MPI_LINKS_HPP
