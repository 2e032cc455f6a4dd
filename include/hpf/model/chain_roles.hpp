// SPDX-License-Identifier: MIT
#ifndef HPF_MODEL_CHAIN_ROLES_HPP
#define HPF_MODEL_CHAIN_ROLES_HPP

#include <hpf/layers/bind.hpp>

#include <array>
#include <cstddef>

namespace hpf::detail {

/// What a chain needs to know of a child to plan its buffers and fusions. One plain record per
/// child, so that the compile-time chain (chain_facts) and the oracle's run-time stages (whose
/// children are known only once a partition is chosen) plan from the same code.
struct ChainChild {
  std::size_t output_size = 0;  ///< per sample
  std::size_t parameters = 0;
  bool runs_in_place = false;
  bool backward_reads_output = false;
  bool is_relu = false;
  bool can_apply_next_relu_forward = false;
  bool can_apply_next_relu_backward = false;
  bool can_apply_previous_relu = false;
};

template <class Bound>
constexpr ChainChild chain_child() {
  return {.output_size = Bound::output_shape::size,
          .parameters = Bound::cost.parameters,
          .runs_in_place = runs_in_place<Bound>(),
          .backward_reads_output = backward_reads_output<Bound>(),
          .is_relu = is_relu<Bound>(),
          .can_apply_next_relu_forward = applies_next_relu_forward<Bound>(),
          .can_apply_next_relu_backward = applies_next_relu_backward<Bound>(),
          .can_apply_previous_relu = applies_previous_relu<Bound>()};
}

/// What child I does in its chain.
struct ChainRole {
  /// It writes its output over its input, the output of child I-1: it can run in place and child
  /// I-1's backward does not read that output. The first child never does (its input is the
  /// caller's). The last child's output is the caller's: when it runs in place, child I-1 writes
  /// there instead of into a buffer of its own (if it has one to give up), so a block that ends
  /// in a ReLU, as a ResNet's does, keeps one activation less.
  bool in_place = false;
  /// It applies child I+1, an in-place ReLU, in its own pass forward (BatchNorm or Residual, then
  /// ReLU) or backward (BatchNorm): one pass over the values instead of two, the same bits.
  bool applies_next_relu_forward = false;
  bool applies_next_relu_backward = false;
  /// It applies the backward of child I-1, a ReLU, in its own backward (MaxPool: a window's
  /// gradient passes where the ReLU's output at its maximum is positive). Not where the child
  /// before the ReLU applies it already, nor for a first child's ReLU (whose input gradient is
  /// the caller's).
  bool applies_previous_relu_backward = false;
  /// It also applies that ReLU forward (MaxPool: it reads its input through the ReLU), where the
  /// ReLU runs in place and the child before it does not apply it: the ReLU's output is then
  /// never written, and its buffer keeps the ReLU's input, positive where the output is, which is
  /// all the pool's backward reads of it. The same bits, argmaxes included.
  bool applies_previous_relu_forward = false;
  /// Which of the chain's two gradient buffers holds the gradient at its output (I < count - 1;
  /// the last child's is the caller's): they alternate, but a ReLU whose backward the next child
  /// applies passes its output gradient's buffer on as its input gradient's.
  std::size_t gradient_buffer = 0;
};

/// The roles of a chain's `count` children.
constexpr void assign_chain_roles(const ChainChild* child, std::size_t count, ChainRole* role) {
  for (std::size_t i = 1; i + 1 < count; ++i) role[i].in_place = child[i].runs_in_place && !child[i - 1].backward_reads_output;
  if (count >= 2) {
    role[count - 1].in_place =
        child[count - 1].runs_in_place && !child[count - 2].backward_reads_output && !role[count - 2].in_place;
  }
  for (std::size_t i = 0; i + 1 < count; ++i) {
    role[i].applies_next_relu_forward = child[i].can_apply_next_relu_forward && child[i + 1].is_relu && role[i + 1].in_place;
    role[i].applies_next_relu_backward = child[i].can_apply_next_relu_backward && role[i].applies_next_relu_forward;
  }
  for (std::size_t i = 2; i < count; ++i) {
    role[i].applies_previous_relu_backward =
        child[i].can_apply_previous_relu && child[i - 1].is_relu && !role[i - 2].applies_next_relu_backward;
    role[i].applies_previous_relu_forward =
        role[i].applies_previous_relu_backward && role[i - 1].in_place && !role[i - 2].applies_next_relu_forward;
  }
  if (count >= 2) {
    role[count - 2].gradient_buffer = (count - 2) % 2;
    for (std::size_t i = count - 2; i-- > 0;) {
      role[i].gradient_buffer = role[i + 2].applies_previous_relu_backward ? role[i + 1].gradient_buffer
                                                                            : 1 - role[i + 1].gradient_buffer;
    }
  }
}

/// Child I's backward is a neighbour's: it is a ReLU whose backward the child before or after it
/// applies.
constexpr bool backward_applied_by_neighbour(const ChainRole* role, std::size_t count, std::size_t i) {
  return (i > 0 && role[i - 1].applies_next_relu_backward) ||
         (i + 1 < count && role[i + 1].applies_previous_relu_backward);
}

/// Whether child I's backward forms its input gradient: the caller wants the chain's, or a child
/// before it has parameters (`parameters_before`: theirs).
constexpr bool wants_input_gradient(bool input_gradient_wanted, std::size_t parameters_before) {
  return input_gradient_wanted || parameters_before > 0;
}

/// Per sample, the elements of each of the chain's two gradient buffers that its backward writes:
/// the largest gradient each ever holds. Each buffer is as large as the largest inner output, and
/// where the gradient at that output is never formed, or sits in the other buffer (a max pool
/// that applies the ReLU before it writes the gradient at the convolution's output into the
/// buffer of its own input gradient), a buffer's tail is never touched: allocated, not resident.
constexpr std::array<std::size_t, 2> gradient_buffers_written(const ChainChild* child, const ChainRole* role,
                                                              std::size_t count, bool input_gradient_wanted) {
  std::array<std::size_t, 2> written{};
  std::size_t parameters_before = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0 && wants_input_gradient(input_gradient_wanted, parameters_before) &&
        !backward_applied_by_neighbour(role, count, i)) {
      std::size_t& w = written[role[i - 1].gradient_buffer];
      w = child[i - 1].output_size > w ? child[i - 1].output_size : w;
    }
    parameters_before += child[i].parameters;
  }
  return written;
}

}  // namespace hpf::detail

#endif  // HPF_MODEL_CHAIN_ROLES_HPP
