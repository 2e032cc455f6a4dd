// SPDX-License-Identifier: MIT
#ifndef HPF_ORACLE_MEMORY_HPP
#define HPF_ORACLE_MEMORY_HPP

#include <hpf/oracle/model_facts.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace hpf::oracle {

/// \brief Bytes one rank of a stage holds at its peak, by what holds them: the views the engine
/// allocates (hpf::StageEngine, Network, the optimizer, GradientBuckets), not the process around
/// them (libraries, MPI, the data set).
struct MemoryBreakdown {
  std::size_t parameters = 0;
  std::size_t gradients = 0;
  std::size_t buffers = 0;          ///< BatchNorm running statistics
  std::size_t optimizer_state = 0;  ///< momentum; Adam's two moments
  /// Every micro-batch slot's tape: its input, the outputs the layers keep for backward, the
  /// labels, the samples' global indices; the schedule keeps M slots (GPipe) or at most S - s
  /// (1F1B).
  std::size_t activations = 0;
  std::size_t boundary_gradients = 0;  ///< per slot: gradients received from / sent to neighbours
  std::size_t gradient_buckets = 0;    ///< the ordered reduction gathers every replica's buckets
  std::size_t workspace = 0;           ///< the layers' shared scratch (im2col columns, vendor kernels, bf16 copies)
  std::size_t scratch = 0;             ///< gradient buffers of composites during backward
  std::size_t runtime = 0;             ///< the Kokkos backend's own (Kokkos::Serial's team scratch)
  /// Under a filter or channel split: what each split layer keeps for itself (partial sums,
  /// packed weights, columns, a vendor's scratch) summed over the stage's layers, and the
  /// group's gathered parts.
  std::size_t split_buffers = 0;
  /// Of the workspace, split_buffers and scratch, the bytes in pages never written (a vendor's
  /// scratchpad is sized for the largest of its primitives' needs, and the kernels that run write
  /// less; a gradient buffer may never hold the largest gradient it is sized for): allocated, so
  /// in total(), but not resident.
  std::size_t unwritten = 0;

  constexpr std::size_t total() const noexcept {
    return parameters + gradients + buffers + optimizer_state + activations + boundary_gradients + gradient_buckets +
           workspace + scratch + runtime + split_buffers;
  }
  /// What of total() the resident set holds: the pages written.
  constexpr std::size_t resident() const noexcept { return total() - unwritten; }
};

/// \brief What besides the stage's facts decides its memory.
struct MemoryInputs {
  std::size_t scalar_bytes = sizeof(float);
  std::size_t slots = 1;     ///< tapes the schedule keeps (slots_needed)
  std::size_t capacity = 1;  ///< samples per micro-batch (the largest one)
  bool first = true, last = true;
  bool classifier = true;            ///< the last stage keeps int32 labels per sample
  std::size_t label_size = 1;        ///< labels per sample (one per position of a sequence)
  std::size_t optimizer_values = 1;  ///< per parameter: SGD with momentum 1, without 0, Adam 2
  std::size_t replicas = 1;
  /// Copies of the stage's gradient the busiest rank gathers to reduce them (the ordered
  /// reduction's; hpf::oracle::detail::gathered_copies).
  double gathered_copies = 0;
  /// Measured by calibration for the stage's layers at `capacity` (elements): the largest
  /// workspace and the largest gradient scratch of one of its top-level layers (a Repeat piece of
  /// two or more copies with the two buffers between its copies). Without calibration the model
  /// counts only the stage chain's own gradient buffers.
  std::size_t workspace_elements = 0;
  std::size_t child_scratch_elements = 0;
  /// Under bf16 products: the copies the stage's Bf16Gemm keeps, the widest of each over its
  /// layers' (calibrated, UnitTiming::bf16_staging), in bytes.
  std::size_t bf16_staging_bytes = 0;
  /// Measured by calibration for the backend (MachineProfile): what Kokkos allocates for itself
  /// once a step's kernels have run, and what it counts for an empty view (Kokkos 3.4: its
  /// 128-byte header). A stage without parameters still holds its four empty state views.
  std::size_t runtime_bytes = 0;
  std::size_t empty_view_bytes = 0;
  /// Activation elements per sample that re-materialization does not keep (recompute_saved_elements).
  std::size_t recompute_saved_elements = 0;
  /// Under a filter or channel split: the elements the stage's split layers keep, each its own
  /// (calibrated for one member, UnitTiming::split_buffer_elements, summed over the stage's units).
  std::size_t split_buffer_elements = 0;
  /// Of those, the elements in pages the member's passes never wrote (UnitTiming::
  /// split_buffer_resident_elements), and of the workspace, those its layers never wrote
  /// (UnitTiming::workspace_resident_elements: the largest need less the most written).
  std::size_t split_buffer_unwritten_elements = 0;
  std::size_t workspace_unwritten_elements = 0;
  /// Of the stage chain's two gradient buffers, the elements its backward never writes
  /// (stage_gradient_buffers_written).
  std::size_t gradient_buffer_unwritten_elements = 0;
};

/// Bytes per sample of a micro-batch's tape that its forward writes and its backward reads: the
/// stage's input, the activations and indices its layers keep (`saved_elements` fewer activations
/// under re-materialization). Tapes in flight (in_flight_share) and memory count them.
constexpr std::size_t tape_bytes_per_sample(std::size_t input_elements, const LayerCost& cost, std::size_t scalar_bytes,
                                            std::size_t saved_elements = 0) {
  return (input_elements + cost.activations - saved_elements) * scalar_bytes + cost.saved_indices * sizeof(std::int32_t);
}

/// Peak bytes of one rank of stage `stage` (the allocation hpf makes for it, exactly as the engine
/// makes it: the equations are in docs/oracle.md).
constexpr MemoryBreakdown stage_memory(const StageFacts& stage, const MemoryInputs& in) {
  const std::size_t d = in.scalar_bytes, c = in.capacity;
  const auto view = [&](std::size_t bytes) { return bytes > 0 ? bytes : in.empty_view_bytes; };
  MemoryBreakdown m;
  m.parameters = view(stage.cost.parameters * d);
  m.gradients = view(stage.cost.parameters * d);
  m.buffers = view(stage.cost.buffers * d);
  m.optimizer_state = in.optimizer_values * view(stage.cost.parameters * d);
  const std::size_t labels = in.last && in.classifier ? in.label_size * sizeof(std::int32_t) : 0;
  m.activations = in.slots * c *
                  (tape_bytes_per_sample(stage.input_elements, stage.cost, d, in.recompute_saved_elements) + labels +
                   sizeof(std::uint64_t));
  m.boundary_gradients =
      in.slots * c * ((in.last ? 0 : stage.output_elements) + (in.first ? 0 : stage.input_elements)) * d;
  if (in.replicas > 1) {
    m.gradient_buckets = static_cast<std::size_t>(in.gathered_copies * static_cast<double>(stage.cost.parameters * d));
  }
  m.workspace = in.workspace_elements * d + in.bf16_staging_bytes;
  m.scratch = (2 * stage.largest_inner_output * c + in.child_scratch_elements) * d;
  m.runtime = in.runtime_bytes;
  m.split_buffers = in.split_buffer_elements * d;
  m.unwritten = (std::min(in.split_buffer_unwritten_elements, in.split_buffer_elements) +
                 std::min(in.workspace_unwritten_elements, in.workspace_elements) +
                 std::min(in.gradient_buffer_unwritten_elements, 2 * stage.largest_inner_output * c)) * d;
  return m;
}

}  // namespace hpf::oracle

#endif  // HPF_ORACLE_MEMORY_HPP
