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

namespace detail {
/// Sum of the first n per-sample losses, reduced in Kokkos' fixed order (reproducible).
template <class Space, class T>
T sum_losses(const Space& space, const Buffer<T, Space>& losses, std::size_t n, const char* label) {
  T total = 0;
  Kokkos::parallel_reduce(
      label, Kokkos::RangePolicy<Space>(space, 0, n), KOKKOS_LAMBDA(const std::size_t j, T& acc) { acc += losses(j); },
      total);
  return total;
}
}  // namespace detail

}  // namespace hpf

#endif  // HPF_LAYERS_LOSS_HPP
