// SPDX-License-Identifier: MIT
#ifndef HPF_MODEL_REPEAT_HPP
#define HPF_MODEL_REPEAT_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/tensor/views.hpp>

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

namespace hpf {

/// Compile error for a Repeat whose block changes the shape of its input.
template <class BlockInput, class BlockOutput>
struct repeated_block_changes_shape {
  static_assert(std::is_same_v<BlockInput, BlockOutput>,
                "hpf::Repeat: a repeated block must keep the shape of its input (see the template "
                "arguments of hpf::repeated_block_changes_shape above); put a shape-changing block "
                "before the Repeat");
  static constexpr bool value = std::is_same_v<BlockInput, BlockOutput>;
};

namespace detail {

/// N instances of one block implementation: compile time does not grow with N. With
/// re-materialization (KernelResources::recompute_blocks) the blocks share one block tape: forward
/// keeps only the outputs between blocks (the next block's inputs), and backward runs each
/// block's forward again (ctx.recomputing) into a buffer of its own before its backward. Forward
/// is deterministic, so the rebuilt activations, and the gradients, are the same bits.
template <class BlockBound, std::size_t N, std::size_t FirstIndex, class T, class Space>
class RepeatImpl {
  using Shape_ = typename BlockBound::input_shape;
  using block_impl = typename BlockBound::template impl<T, Space>;

 public:
  struct tape_type {
    std::vector<typename block_impl::tape_type> blocks = std::vector<typename block_impl::tape_type>(N);
    std::vector<Buffer<T, Space>> outputs = std::vector<Buffer<T, Space>>(N - 1);  // between blocks
    Buffer<T, Space> recomputed;  // a block's output rebuilt in backward (re-materialization)
  };

  void bind(ParameterBinder<T, Space>& binder) {
    recompute_ = binder.kernels().recompute_blocks;
    for (std::size_t i = 0; i < N; ++i) {
      parameter_begin_[i] = binder.parameter_offset();
      auto scope = binder.scope(FirstIndex + i);
      blocks_[i].bind(binder);
    }
  }
  void reserve(tape_type& tape, std::size_t capacity) {
    for (std::size_t i = 0; i < (recompute_ ? 1 : N); ++i) blocks_[i].reserve(tape.blocks[i], capacity);
    for (auto& buffer : tape.outputs) ensure_capacity(buffer, Shape_::size * capacity, "hpf::Repeat::output");
    if (recompute_) ensure_capacity(tape.recomputed, Shape_::size * capacity, "hpf::Repeat::recomputed");
  }
  std::size_t workspace(std::size_t capacity) const { return blocks_[0].workspace(capacity); }
  /// Two gradient buffers between copies, then a block's own scratch.
  std::size_t scratch(std::size_t capacity) const { return own_scratch(capacity) + scratch_of(blocks_[0], capacity); }

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y, tape_type& tape) const {
    const std::size_t n = x.extent(1);
    for (std::size_t i = 0; i < N; ++i) {
      blocks_[i].forward(ctx, i == 0 ? x : view(tape.outputs[i - 1], n), i + 1 == N ? y : view(tape.outputs[i], n),
                         block_tape(tape, i));
    }
  }

  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> y,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type& tape) const {
    const std::size_t n = x.extent(1);
    T* gradients = ctx.scratch_at(own_scratch(n));
    const Context<T, Space> inner = ctx.after_scratch(own_scratch(n));
    auto gradient = [&](std::size_t which) {
      return Activation<T, Space>(gradients + which * Shape_::size * n, Shape_::channels, n, Shape_::spatial);
    };
    Context<T, Space> again = inner;
    again.recomputing = true;
    for (std::size_t i = N; i-- > 0;) {
      const ConstActivation<T, Space> block_in = i == 0 ? x : ConstActivation<T, Space>(view(tape.outputs[i - 1], n));
      ConstActivation<T, Space> block_out = i + 1 == N ? y : ConstActivation<T, Space>(view(tape.outputs[i], n));
      if (recompute_) {
        const Activation<T, Space> rebuilt = view(tape.recomputed, n);
        blocks_[i].forward(again, block_in, rebuilt, block_tape(tape, i));
        block_out = rebuilt;
      }
      const ConstActivation<T, Space> grad_out = i + 1 == N ? dy : ConstActivation<T, Space>(gradient(i % 2));
      const Activation<T, Space> grad_in = i == 0 ? dx : gradient((i - 1) % 2);
      blocks_[i].backward(inner, block_in, block_out, grad_out, grad_in, block_tape(tape, i));
      if (ctx.gradients_ready) ctx.gradients_ready(parameter_begin_[i]);
    }
  }

 private:
  static constexpr std::size_t own_scratch(std::size_t n) { return N > 1 ? 2 * Shape_::size * n : 0; }
  static Activation<T, Space> view(const Buffer<T, Space>& buffer, std::size_t n) {
    return activation_view(buffer, Shape_::channels, n, Shape_::spatial);
  }
  /// Block i's tape: its own, or with re-materialization the one all blocks share.
  typename block_impl::tape_type& block_tape(tape_type& tape, std::size_t i) const {
    return tape.blocks[recompute_ ? 0 : i];
  }

  std::vector<block_impl> blocks_ = std::vector<block_impl>(N);
  std::vector<std::size_t> parameter_begin_ = std::vector<std::size_t>(N);
  bool recompute_ = false;
};

}  // namespace detail

/// \brief N copies of Block, applied one after another, each with its own parameters.
///
/// Repetition is part of the type, not N instantiations: `Repeat<111, Bottleneck>` compiles as
/// fast as `Repeat<2, Bottleneck>`. The block must keep its input shape. Copies are named
/// FirstIndex, FirstIndex + 1, ... (PyTorch: an nn.Sequential of blocks); FirstIndex is set when a
/// pipeline cut splits a Repeat, so names stay those of the whole model.
/// \tparam N number of copies (>= 1)
/// \tparam Block the repeated layer or block (a Chain, a Residual, ...)
template <std::size_t N, class Block, std::size_t FirstIndex = 0>
struct Repeat {
  static_assert(N >= 1, "hpf::Repeat: repeat a block at least once");

  template <class In>
  struct bind {
    using block = bind_t<Block, In>;
    static constexpr bool block_valid = block::output_shape::valid;
    static constexpr bool accepted = !block_valid || std::is_same_v<In, typename block::output_shape>;
    static_assert(sizeof(std::conditional_t<accepted, char, repeated_block_changes_shape<In, typename block::output_shape>>));
    using input_shape = In;
    using output_shape = std::conditional_t<block_valid && accepted, In, InvalidShape>;
    static constexpr LayerCost cost = N * block::cost;
    static constexpr std::size_t leaves = N * block::leaves;
    static constexpr std::size_t count = N;
    static constexpr bool in_place = false;
    static constexpr bool takes_spatial_parts = true;  // its block's layers say whether they do
    static constexpr bool backward_reads_output = hpf::backward_reads_output<block>();
    static constexpr std::size_t first_index = FirstIndex;
    static std::string describe() { return std::to_string(N) + " x " + block::describe(); }
    template <class T, class Space>
    using impl = detail::RepeatImpl<block, N, FirstIndex, T, Space>;
  };
};

}  // namespace hpf

#endif  // HPF_MODEL_REPEAT_HPP
