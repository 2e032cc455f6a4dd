// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_MPI_LINKS_HPP
#define HPF_PARALLEL_MPI_LINKS_HPP

#include <hpf/comm/agreement.hpp>
#include <hpf/comm/clock_offset.hpp>
#include <hpf/comm/gather_text.hpp>
#include <hpf/comm/request.hpp>
#include <hpf/comm/transfer.hpp>
#include <hpf/comm/watchdog.hpp>
#include <hpf/data/shard.hpp>
#include <hpf/parallel/gradient_buckets.hpp>
#include <hpf/parallel/grid.hpp>
#include <hpf/parallel/step_options.hpp>
#include <hpf/tensor/views.hpp>
#include <hpf/trace/chrome_trace.hpp>
#include <hpf/trace/clock.hpp>
#include <hpf/trace/span.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
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
/// Every wait lasts at most hpf::comm::wait_limit() and then ends the job, saying which stage,
/// micro-batch, bucket or collective it waited for (hpf/comm/watchdog.hpp).
template <class T, class Space>
class MpiLinks {
 public:
  using Placement = ProcessGrid;
  using request = comm::Request;
  static std::size_t replicas_of(const Placement& grid) { return grid.replicas(); }

  MpiLinks(const ProcessGrid& grid, Buffer<T, Space> gradients, Buffer<T, Space> buffers, const StepOptions& options)
      : grid_(grid), buffers_(buffers), shard_{grid.replica()},
        buckets_(grid.stage_group(), gradients, options.bucket_bytes, options.reduction, static_cast<int>(grid.stage())) {}

  std::size_t stages() const { return grid_.stages(); }
  std::size_t stage() const { return grid_.stage(); }
  std::size_t replicas() const { return grid_.replicas(); }
  std::span<const std::size_t> shards() const { return {&shard_, 1}; }
  data::Shard evaluation_shard() const { return {grid_.replica(), grid_.replicas()}; }
  const ProcessGrid& grid() const { return grid_; }

  template <class View>
  void receive_from_previous(const View& v, int tag) const {
    comm::recv(grid_.pipeline(), v, static_cast<int>(grid_.stage()) - 1, tag, detail::pipeline_transfer(grid_.stage(), tag));
  }
  template <class View>
  void receive_from_next(const View& v, int tag) const {
    comm::recv(grid_.pipeline(), v, static_cast<int>(grid_.stage()) + 1, tag, detail::pipeline_transfer(grid_.stage(), tag));
  }
  template <class View>
  request send_to_next(const View& v, int tag) const {
    return comm::isend(grid_.pipeline(), v, static_cast<int>(grid_.stage()) + 1, tag, detail::pipeline_transfer(grid_.stage(), tag));
  }
  template <class View>
  request send_to_previous(const View& v, int tag) const {
    return comm::isend(grid_.pipeline(), v, static_cast<int>(grid_.stage()) - 1, tag, detail::pipeline_transfer(grid_.stage(), tag));
  }

  // The timeline's collective parts (hpf::Timeline).
  trace::ClockSample clock_sample() const { return comm::measure_clock_offset(grid_.world()); }
  trace::ProcessFacts trace_facts() const {
    return {.rank = grid_.world().rank(), .stage = static_cast<int>(grid_.stage()), .replica = static_cast<int>(grid_.replica()),
            .buckets = grid_.replicas() > 1 ? buckets_.bucket_count() : 0};
  }
  std::vector<std::string> gather_on_first(const std::string& part) const { return comm::gather_text(grid_.world(), part); }

  // A checkpoint's parts (hpf::Checkpointer): each stage's first replica writes the stage; a
  // failure anywhere fails every rank (comm::agree).
  bool first_process() const { return grid_.world().rank() == 0; }
  bool writes_stage() const { return grid_.replica() == 0; }
  template <class F>
  auto agree(F&& f) const {
    return comm::agree(grid_.world(), std::forward<F>(f));
  }
  std::string share_from_first(std::string text) const { return comm::broadcast_text(grid_.world(), std::move(text), 0); }

  void begin_step() { buckets_.begin_step(); }
  /// Starts the buckets backward has finished (overlapping the rest of backward).
  std::function<void(std::size_t)> gradients_ready() {
    if (grid_.replicas() == 1) return {};
    return [this](std::size_t offset) { buckets_.ready(offset); };
  }
  void shard_done(std::size_t) {}
  void finish_gradients() { buckets_.finish(); }
  void share_buffers() {
    if (grid_.replicas() == 1 || buffers_.extent(0) == 0) return;
    trace::Blocking span(trace::Track::collective, "broadcast buffers",
                         {.stage = static_cast<std::int32_t>(grid_.stage()), .bytes = static_cast<std::int64_t>(buffers_.size() * sizeof(T))});
    comm::broadcast(grid_.stage_group(), buffers_, 0,
                    {.what = "buffers", .members = "replicas", .stage = static_cast<int>(grid_.stage())});
  }
  /// The step's loss on every rank: the last stages' sums added in replica order; NaN when any
  /// rank's gradients are not finite (`gradients_finite` false), so every rank sees it alike.
  double total_loss(std::span<const double> per_shard, bool holds_loss, bool gradients_finite = true) const {
    trace::Blocking span(trace::Track::collective, "allgather loss", {.stage = static_cast<std::int32_t>(grid_.stage())});
    const double mine = !gradients_finite ? NAN : holds_loss ? per_shard[0] : 0.0;
    const auto all = comm::allgather_value(grid_.world(), mine, {.what = "the loss"});
    double total = 0;
    for (std::size_t r = 0; r < grid_.replicas(); ++r) total += all[static_cast<std::size_t>(grid_.rank_of(r, grid_.stages() - 1))];
    for (const double v : all) {
      if (v - v != 0.0) return NAN;
    }
    return total;
  }
  /// Totals of an evaluation (summed loss, correct samples) over replicas, on every rank.
  std::pair<double, std::size_t> total_evaluation(double loss, std::size_t correct, bool holds_result) const {
    const double total_loss = this->total_loss({&loss, 1}, holds_result);
    const auto all = comm::allreduce_value(grid_.world(), static_cast<unsigned long long>(holds_result ? correct : 0),
                                           MPI_SUM, {.what = "the evaluation's correct samples"});
    return {total_loss, static_cast<std::size_t>(all)};
  }

 private:
  const ProcessGrid& grid_;
  Buffer<T, Space> buffers_;
  std::size_t shard_;
  GradientBuckets<T, Space> buckets_;
};

}  // namespace hpf

#endif  // HPF_PARALLEL_MPI_LINKS_HPP
