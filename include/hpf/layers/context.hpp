// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_CONTEXT_HPP
#define HPF_LAYERS_CONTEXT_HPP

#include <hpf/tensor/views.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

namespace hpf {

/// Labels of a batch, in the execution space's memory.
template <class Space>
using LabelView = Kokkos::View<const std::int32_t*, memory_space_t<Space>,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// Real-valued targets of a batch, `[n][K]` (sample j's K values together), in the execution
/// space's memory.
template <class T, class Space>
using TargetView = Kokkos::View<const T*, memory_space_t<Space>, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// Global dataset indices of a batch's samples, in the execution space's memory.
template <class Space>
using SampleIdView = Kokkos::View<const std::uint64_t*, memory_space_t<Space>, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// \brief What one forward or backward call of a layer needs besides its tensors.
template <class T, class Space>
struct Context {
  /// Instance the layer's kernels run on.
  Space space{};
  /// Training mode (BatchNorm uses batch statistics and updates running ones) or evaluation.
  bool training = true;
  /// A forward pass run again inside backward to rebuild activations (re-materialization): the
  /// same arithmetic, but state that forward advances (BatchNorm's running statistics) stays.
  bool recomputing = false;
  /// What random layers (Dropout) draw from, so that every layout draws alike: the network's seed,
  /// the optimizer step (a key unique per epoch and step), and each sample's global index.
  std::uint64_t seed = 0;
  std::uint64_t step = 0;
  SampleIdView<Space> samples;
  /// Class labels of the (micro-)batch, read by a classification loss.
  LabelView<Space> labels;
  /// Real-valued targets of the (micro-)batch, read by a regression loss.
  TargetView<T, Space> targets;
  /// d(reported loss)/d(per-sample loss): 1 / (samples in the *global* batch), so gradients of
  /// micro-batches and replicas simply add up to the gradient of the mean loss.
  T loss_scale = T(1);
  /// Scratch shared by all layers (e.g. im2col columns); sized from their workspace requests.
  Buffer<T, Space> workspace;
  /// Gradient scratch of composite layers, used as a stack during backward: a composite takes
  /// its buffers from `scratch_offset` on and hands its children the rest. One network-wide
  /// buffer sized by the deepest nesting, not one pair of buffers per block.
  Buffer<T, Space> scratch;
  std::size_t scratch_offset = 0;

  /// `elements` of scratch from the current offset on.
  T* scratch_at(std::size_t elements) const {
    KOKKOS_ASSERT(scratch.extent(0) >= scratch_offset + elements);
    (void)elements;
    return scratch.data() + scratch_offset;
  }
  /// A copy whose scratch starts `used` elements further (for the children of a composite).
  Context after_scratch(std::size_t used) const {
    Context inner = *this;
    inner.scratch_offset += used;
    return inner;
  }
  /// Host callback during backward: every gradient at flat offset >= the argument is final for
  /// this micro-batch. Gradient buckets start their allreduce from it. May be empty.
  std::function<void(std::size_t)> gradients_ready;
  /// Host callback after each layer's forward with the layer's index, kind and output (e.g. to
  /// find the first layer whose output is not finite). Empty in normal runs: costs one test.
  std::function<void(std::size_t, std::string_view, ConstActivation<T, Space>)> after_forward;
  /// Host callback after each layer's forward that does not look at outputs (a pipeline stage
  /// lets its messages in flight progress there): unlike after_forward, layers may still fuse.
  std::function<void()> between_layers;
};

/// Gradient scratch a layer implementation needs (0 for leaf layers, which define no scratch()).
template <class Impl>
std::size_t scratch_of(const Impl& impl, std::size_t capacity) {
  if constexpr (requires { impl.scratch(capacity); }) {
    return impl.scratch(capacity);
  } else {
    return 0;
  }
}

}  // namespace hpf

#endif  // HPF_LAYERS_CONTEXT_HPP
