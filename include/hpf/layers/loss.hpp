// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_LOSS_HPP
#define HPF_LAYERS_LOSS_HPP

#include <hpf/tensor/views.hpp>

#include <Kokkos_Core.hpp>

#include <concepts>
#include <cstddef>

namespace hpf {

/// \brief A bound layer that computes the training loss (the last layer of a trainable model).
/// Besides the layer protocol its implementation has `loss_sum(ctx, tape, n)`; it reads class
/// labels from the context when `classifies` (and then also counts `correct(ctx, y)`
/// predictions), otherwise `target_size` real targets per sample.
template <class Bound>
concept LossLayer = requires {
  requires Bound::is_loss;
  { Bound::classifies } -> std::convertible_to<bool>;
};

/// A loss against class labels (accuracy is defined).
template <class Bound>
concept ClassificationLoss = LossLayer<Bound> && Bound::classifies;

/// Class labels per sample a bound layer reads: 1, or its `label_size` (one per position of a
/// sequence); 0 unless it is a classification loss.
template <class Bound>
inline constexpr std::size_t loss_label_size_v = [] {
  if constexpr (!ClassificationLoss<Bound>) {
    return std::size_t{0};
  } else if constexpr (requires { Bound::label_size; }) {
    return std::size_t{Bound::label_size};
  } else {
    return std::size_t{1};
  }
}();

namespace detail {
/// \brief What every loss implementation shares: no parameters, no workspace, and a tape of
/// per-sample losses that forward writes and the network reduces once per micro-batch, in sample
/// order. Derived classes add forward and backward.
template <class T, class Space>
class PerSampleLoss {
 public:
  struct tape_type {
    Buffer<T, Space> losses;
  };
  template <class Binder>
  void bind(Binder&) {}
  void reserve(tape_type& tape, std::size_t capacity) { ensure_capacity(tape.losses, capacity, "hpf::loss::losses"); }
  std::size_t workspace(std::size_t) const { return 0; }

  /// Sum of the per-sample losses of the last forward over n samples (blocks until done). Added
  /// on the host in sample order: the same bits on any backend and thread count (a Kokkos
  /// reduction's order follows the threads), for a few hundred values at most.
  template <class Context>
  T loss_sum(const Context& ctx, const tape_type& tape, std::size_t n) const {
    ctx.space.fence();
    const auto losses = Kokkos::create_mirror_view_and_copy(
        Kokkos::HostSpace{}, Kokkos::subview(tape.losses, Kokkos::make_pair(std::size_t{0}, n)));
    T total = 0;
    for (std::size_t j = 0; j < n; ++j) total += losses(j);
    return total;
  }
};
}  // namespace detail

}  // namespace hpf

#endif  // HPF_LAYERS_LOSS_HPP
