// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_SOFTMAX_CROSS_ENTROPY_HPP
#define HPF_LAYERS_SOFTMAX_CROSS_ENTROPY_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/loss.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/tensor/math.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace hpf {

namespace detail {
/// Softmax + cross-entropy on `[K][N]` logits. Output: the class probabilities. Per-sample
/// losses go to the tape; their sum is reduced once per micro-batch by the network, in a fixed
/// order, so reported losses are reproducible.
template <class T, class Space>
class SoftmaxCrossEntropyImpl : public PerSampleLoss<T, Space> {
 public:
  using typename PerSampleLoss<T, Space>::tape_type;

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type& tape) const {
    trace::Region region("hpf::SoftmaxCrossEntropy::forward");
    const std::size_t classes = x.extent(0), n = x.extent(1);
    const auto labels = ctx.labels;
    const bool with_labels = labels.extent(0) >= n;
    const auto losses = tape.losses;
    Kokkos::parallel_for(
        "hpf::SoftmaxCrossEntropy::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, n),
        KOKKOS_LAMBDA(const std::size_t j) {
          // The largest logit's exp(0) = 1 is kept out of the sum of the others: a well-learnt
          // sample's loss is log1p(others), which 1 + others would round to float's ulp of 1 (and
          // max + log(sum) - logit to the logit's ulp): up to 5 % of a loss of 3e-5.
          std::size_t top = 0;
          for (std::size_t k = 1; k < classes; ++k) top = x(k, j, 0) > x(top, j, 0) ? k : top;
          const T max_logit = x(top, j, 0);
          T others = 0;
          for (std::size_t k = 0; k < classes; ++k) {
            const T e = math::exp(x(k, j, 0) - max_logit);
            y(k, j, 0) = e;
            others += k == top ? T(0) : e;
          }
          const T inv = T(1) / (T(1) + others);
          for (std::size_t k = 0; k < classes; ++k) y(k, j, 0) *= inv;
          if (with_labels) {
            losses(j) = (max_logit - x(labels(j), j, 0)) + math::log1p(others);
          }
        });
  }

  /// dx = (softmax - onehot(label)) * loss_scale; dy is ignored (this layer starts backward).
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space>, ConstActivation<T, Space> y,
                ConstActivation<T, Space>, Activation<T, Space> dx, tape_type&) const {
    if (is_empty(dx)) return;
    trace::Region region("hpf::SoftmaxCrossEntropy::backward");
    const std::size_t classes = y.extent(0), n = y.extent(1);
    const auto labels = ctx.labels;
    const T scale = ctx.loss_scale;
    Kokkos::parallel_for(
        "hpf::SoftmaxCrossEntropy::backward", Kokkos::RangePolicy<Space>(ctx.space, 0, n),
        KOKKOS_LAMBDA(const std::size_t j) {
          const std::size_t label = static_cast<std::size_t>(labels(j));
          for (std::size_t k = 0; k < classes; ++k) {
            dx(k, j, 0) = (y(k, j, 0) - (k == label ? T(1) : T(0))) * scale;
          }
        });
  }


  /// Samples whose most probable class (first maximum, as torch.argmax) equals the label.
  std::size_t correct(const Context<T, Space>& ctx, ConstActivation<T, Space> y) const {
    const std::size_t classes = y.extent(0), n = y.extent(1);
    const auto labels = ctx.labels;
    std::size_t hits = 0;
    Kokkos::parallel_reduce(
        "hpf::SoftmaxCrossEntropy::correct", Kokkos::RangePolicy<Space>(ctx.space, 0, n),
        KOKKOS_LAMBDA(const std::size_t j, std::size_t& acc) {
          std::size_t best = 0;
          for (std::size_t k = 1; k < classes; ++k) best = y(k, j, 0) > y(best, j, 0) ? k : best;
          acc += best == static_cast<std::size_t>(labels(j)) ? 1 : 0;
        },
        hits);
    return hits;
  }
};
}  // namespace detail

/// \brief Softmax followed by the mean cross-entropy loss against integer labels (PyTorch's
/// nn.CrossEntropyLoss on logits). Must be the last layer of a trainable model; its output is the
/// class probabilities.
struct SoftmaxCrossEntropy {
  template <class In>
  struct bind {
    static_assert(In::rank == 1 && In::size >= 2,
                  "hpf::SoftmaxCrossEntropy: the input must be a vector of at least 2 class "
                  "logits (e.g. the output of a Dense layer)");
    static constexpr bool accepted = In::rank == 1 && In::size >= 2;
    static constexpr bool is_loss = true;
    static constexpr bool classifies = true;
    static constexpr std::size_t classes = In::size;
    using input_shape = In;
    using output_shape = std::conditional_t<accepted, In, InvalidShape>;
    // Activations: the probabilities and the per-sample loss (the tape of detail::PerSampleLoss).
    static constexpr LayerCost cost{.forward_flops = 4 * In::size, .backward_flops = 2 * In::size,
                                    .activations = In::size + 1};
    static constexpr bool in_place = false;
    static constexpr bool backward_reads_output = true;  // the gradient reads the probabilities
    static constexpr std::size_t leaves = 1;
    static std::string describe() { return "SoftmaxCrossEntropy(" + std::to_string(In::size) + " classes)"; }
    template <class T, class Space>
    using impl = detail::SoftmaxCrossEntropyImpl<T, Space>;
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_SOFTMAX_CROSS_ENTROPY_HPP
