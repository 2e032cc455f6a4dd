// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_LOCAL_LINKS_HPP
#define HPF_PARALLEL_LOCAL_LINKS_HPP

#include <hpf/data/shard.hpp>
#include <hpf/parallel/gradient_reduction.hpp>
#include <hpf/parallel/step_options.hpp>
#include <hpf/tensor/bf16_arrays.hpp>
#include <hpf/tensor/ordered_sum.hpp>
#include <hpf/tensor/views.hpp>
#include <hpf/trace/chrome_trace.hpp>
#include <hpf/trace/clock.hpp>
#include <hpf/trace/span.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace hpf {

/// \brief What a StageEngine running the whole model on one process uses in place of MPI: it
/// stands in for `shards` replicas, visiting each one's piece of a step in turn (or side by
/// side, one per thread: Placement::side_by_side), and combines them exactly as those replicas
/// would (see MpiLinks for the parallel side of each member).
/// - gradients: with an ordered reduction each shard's gradient is parked and the shards are
///   added in hpf::ordered_sum's tree, the bits R replicas get; otherwise they accumulate
///   (ExchangePrecision::bf16: each parked gradient and the sum rounded to bf16, as they travel);
/// - buffers (BatchNorm running statistics): replica 0's, as every replica holds after a step;
/// - the step's loss: the shards' sums added in shard order.
template <class T, class Space>
class LocalLinks {
 public:
  /// Replicas one process reproduces (TrainOptions::data_shards), and whether it trains them side
  /// by side on its threads (TrainOptions::shards_side_by_side).
  struct Placement {
    std::size_t shards = 1;
    bool side_by_side = false;
  };
  /// Nothing is ever in flight.
  struct request {
    bool done() const { return true; }
    void wait() {}
  };
  static std::size_t replicas_of(const Placement& placement) { return placement.shards; }

  LocalLinks(const Placement& placement, Buffer<T, Space> gradients, Buffer<T, Space> buffers,
             const StepOptions& options)
      : gradients_(gradients), buffers_(buffers), shard_count_(placement.shards),
        ordered_(placement.shards > 1 && resolve(options.reduction, placement.shards) == GradientReduction::ordered),
        bf16_(ordered_ && options.exchange_precision == ExchangePrecision::bf16),
        side_by_side_(placement.side_by_side && ordered_) {
    shards_.resize(shard_count_);
    std::iota(shards_.begin(), shards_.end(), std::size_t{0});
  }

  std::size_t stages() const { return 1; }
  std::size_t stage() const { return 0; }
  std::size_t replicas() const { return shard_count_; }
  /// Shards of the sampler this process trains on in each step, in order.
  std::span<const std::size_t> shards() const { return shards_; }
  /// Whether the shards may train side by side, each with a network of its own: asked for, and
  /// their gradients parked and added in a fixed tree (the ordered reduction), so the bits do not
  /// depend on which finishes first.
  bool shards_side_by_side() const { return side_by_side_; }
  /// The part of an evaluation set this process streams through the model: all of it.
  data::Shard evaluation_shard() const { return {}; }

  // The timeline's parts (hpf::Timeline): this process is its own reference and the only part.
  trace::ClockSample clock_sample() const { return trace::own_clock(); }
  trace::ProcessFacts trace_facts() const { return {}; }
  std::vector<std::string> gather_on_first(const std::string& part) const { return {part}; }

  // A checkpoint's parts (hpf::Checkpointer): this process writes everything.
  bool first_process() const { return true; }
  bool writes_stage() const { return true; }
  template <class F>
  auto agree(F&& f) const {
    return f();
  }
  std::string share_from_first(std::string text) const { return text; }

  /// Makes room for the shards this step parks (before any finishes, as they may side by side).
  void begin_step() {
    if (ordered_) ensure_capacity(shard_gradients_, shard_count_ * gradients_.extent(0), "hpf::LocalLinks::shard_gradients");
    if (shard_count_ > 1 && buffers_.extent(0) > 0)
      ensure_capacity(replica0_buffers_, buffers_.extent(0), "hpf::LocalLinks::replica0_buffers");
  }
  /// Nothing overlaps backward here.
  std::function<void(std::size_t)> gradients_ready() const { return {}; }

  /// Shard `k` of shards() has finished its backward passes in the network these links were made
  /// with.
  void shard_done(std::size_t k) {
    park(k, gradients_, buffers_);
    if (ordered_ && k + 1 < shard_count_) Kokkos::deep_copy(gradients_, T(0));
  }
  /// Shard `k` has finished its backward passes in a network of its own (shards side by side),
  /// with `gradients` and `buffers`. Safe for different shards at once after begin_step().
  void shard_done(std::size_t k, const Buffer<T, Space>& gradients, const Buffer<T, Space>& buffers) {
    park(k, gradients, buffers);
  }
  /// Afterwards gradients hold the sum over shards.
  void finish_gradients() {
    if (!ordered_) return;
    trace::Span span(trace::Track::compute, "reduce shards");
    const std::size_t length = gradients_.extent(0);
    if constexpr (std::is_same_v<T, float>) {
      if (bf16_) round_to_bf16_in_place(Space{}, shard_gradients_.data(), shard_count_ * length);
    }
    ordered_sum(Space{}, shard_gradients_.data(), shard_count_, length, gradients_.data(), length);
    if constexpr (std::is_same_v<T, float>) {
      if (bf16_) round_to_bf16_in_place(Space{}, gradients_.data(), length);
    }
  }
  /// Every replica keeps replica 0's buffers.
  void share_buffers() {
    if (shard_count_ > 1 && buffers_.extent(0) > 0) {
      Kokkos::deep_copy(buffers_, Kokkos::subview(replica0_buffers_, Kokkos::make_pair(std::size_t{0}, buffers_.extent(0))));
    }
  }
  /// Sum of the step's loss over shards, given each shard's sum, added in shard order.
  double total_loss(std::span<const double> per_shard, bool /*holds_loss*/, bool gradients_finite = true) const {
    if (!gradients_finite) return NAN;
    double total = 0;
    for (double l : per_shard) total += l;
    return total;
  }
  /// Totals of an evaluation (summed loss, correct samples) over replicas.
  std::pair<double, std::size_t> total_evaluation(double loss, std::size_t correct, bool /*holds_result*/) const {
    return {loss, correct};
  }

 private:
  /// Parks shard k's gradient (ordered reduction) and, for shard 0, its buffers (replica 0's).
  void park(std::size_t k, const Buffer<T, Space>& gradients, const Buffer<T, Space>& buffers) {
    if (!ordered_ && !(k == 0 && shard_count_ > 1 && buffers.extent(0) > 0)) return;
    trace::Span span(trace::Track::compute, "park shard");
    const std::size_t length = gradients.extent(0);
    if (ordered_)
      Kokkos::deep_copy(Kokkos::subview(shard_gradients_, Kokkos::make_pair(k * length, (k + 1) * length)), gradients);
    if (k == 0 && shard_count_ > 1 && buffers.extent(0) > 0)
      Kokkos::deep_copy(Kokkos::subview(replica0_buffers_, Kokkos::make_pair(std::size_t{0}, buffers.extent(0))), buffers);
  }

  Buffer<T, Space> gradients_, buffers_;
  std::size_t shard_count_;
  bool ordered_, bf16_, side_by_side_;
  std::vector<std::size_t> shards_;
  Buffer<T, Space> shard_gradients_, replica0_buffers_;
};

}  // namespace hpf

#endif  // HPF_PARALLEL_LOCAL_LINKS_HPP
