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
/// Softmax + cross-entropy on `[K][N][P]` logits: K classes at each of P positions per sample (1
/// for a classifier, T for a language model's next tokens). Output: the class probabilities. A
/// sample's loss is the mean of its positions' losses, so the reported loss is the loss per
/// label, as PyTorch's mean over all of them. Per-sample losses go to the tape; their sum is
/// reduced once per micro-batch by the network, in a fixed order, so reported losses are
/// reproducible.
template <class T, class Space>
class SoftmaxCrossEntropyImpl : public PerSampleLoss<T, Space> {
 public:
  struct tape_type : PerSampleLoss<T, Space>::tape_type {
    Buffer<T, Space> position_losses;  // [n][P], before each sample's mean
  };

  explicit SoftmaxCrossEntropyImpl(std::size_t positions = 1) : positions_(positions) {}

  void reserve(tape_type& tape, std::size_t capacity) {
    PerSampleLoss<T, Space>::reserve(tape, capacity);
    if (positions_ > 1) ensure_capacity(tape.position_losses, capacity * positions_, "hpf::loss::position_losses");
  }

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type& tape) const {
    trace::Region region("hpf::SoftmaxCrossEntropy::forward");
    const std::size_t classes = x.extent(0), n = x.extent(1), positions = x.extent(2);
    const auto labels = ctx.labels;
    const bool with_labels = labels.extent(0) >= n * positions;
    // One position's loss straight into its sample's slot when there is one position per sample.
    const auto losses = positions > 1 ? tape.position_losses : tape.losses;
    Kokkos::parallel_for(
        "hpf::SoftmaxCrossEntropy::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, n * positions),
        KOKKOS_LAMBDA(const std::size_t e) {
          const std::size_t j = e / positions, p = e % positions;
          // The largest logit's exp(0) = 1 is kept out of the sum of the others: a well-learnt
          // sample's loss is log1p(others), which 1 + others would round to float's ulp of 1 (and
          // max + log(sum) - logit to the logit's ulp): up to 5 % of a loss of 3e-5.
          std::size_t top = 0;
          for (std::size_t k = 1; k < classes; ++k) top = x(k, j, p) > x(top, j, p) ? k : top;
          const T max_logit = x(top, j, p);
          T others = 0;
          for (std::size_t k = 0; k < classes; ++k) {
            const T e_k = math::exp(x(k, j, p) - max_logit);
            y(k, j, p) = e_k;
            others += k == top ? T(0) : e_k;
          }
          const T inv = T(1) / (T(1) + others);
          for (std::size_t k = 0; k < classes; ++k) y(k, j, p) *= inv;
          if (with_labels) losses(e) = (max_logit - x(labels(e), j, p)) + math::log1p(others);
        });
    if (positions > 1 && with_labels) mean_over_positions(ctx, tape, n);
  }

  /// A sample's loss: the mean of its positions', added in position order.
  void mean_over_positions(const Context<T, Space>& ctx, tape_type& tape, std::size_t n) const {
    const std::size_t positions = positions_;
    const auto position_losses = tape.position_losses, losses = tape.losses;
    Kokkos::parallel_for(
        "hpf::SoftmaxCrossEntropy::mean", Kokkos::RangePolicy<Space>(ctx.space, 0, n), KOKKOS_LAMBDA(const std::size_t j) {
          T sum = 0;
          for (std::size_t p = 0; p < positions; ++p) sum += position_losses(j * positions + p);
          losses(j) = sum / static_cast<T>(positions);
        });
  }

  /// dx = (softmax - onehot(label)) * loss_scale / P; dy is ignored (this layer starts backward).
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space>, ConstActivation<T, Space> y,
                ConstActivation<T, Space>, Activation<T, Space> dx, tape_type&) const {
    if (is_empty(dx)) return;
    trace::Region region("hpf::SoftmaxCrossEntropy::backward");
    const std::size_t classes = y.extent(0), n = y.extent(1), positions = y.extent(2);
    const auto labels = ctx.labels;
    const T scale = ctx.loss_scale / static_cast<T>(positions);
    Kokkos::parallel_for(
        "hpf::SoftmaxCrossEntropy::backward", Kokkos::RangePolicy<Space>(ctx.space, 0, n * positions),
        KOKKOS_LAMBDA(const std::size_t e) {
          const std::size_t j = e / positions, p = e % positions;
          const std::size_t label = static_cast<std::size_t>(labels(e));
          for (std::size_t k = 0; k < classes; ++k) {
            dx(k, j, p) = (y(k, j, p) - (k == label ? T(1) : T(0))) * scale;
          }
        });
  }

  /// Labels (samples, or positions) whose most probable class (first maximum, as torch.argmax)
  /// is the label.
  std::size_t correct(const Context<T, Space>& ctx, ConstActivation<T, Space> y) const {
    const std::size_t classes = y.extent(0), n = y.extent(1), positions = y.extent(2);
    const auto labels = ctx.labels;
    std::size_t hits = 0;
    Kokkos::parallel_reduce(
        "hpf::SoftmaxCrossEntropy::correct", Kokkos::RangePolicy<Space>(ctx.space, 0, n * positions),
        KOKKOS_LAMBDA(const std::size_t e, std::size_t& acc) {
          const std::size_t j = e / positions, p = e % positions;
          std::size_t best = 0;
          for (std::size_t k = 1; k < classes; ++k) best = y(k, j, p) > y(best, j, p) ? k : best;
          acc += best == static_cast<std::size_t>(labels(e)) ? 1 : 0;
        },
        hits);
    return hits;
  }

 private:
  std::size_t positions_;
};
}  // namespace detail

template <class In>
struct softmax_cross_entropy_input_not_logits {
  static_assert(In::rank <= 2 && In::channels >= 2,
                "hpf::SoftmaxCrossEntropy: the input must be a vector of at least 2 class logits (e.g. the output "
                "of a Dense layer), or a sequence Shape<T, K> of K >= 2 logits per position");
};

/// \brief Softmax followed by the mean cross-entropy loss against integer labels (PyTorch's
/// nn.CrossEntropyLoss on logits). Must be the last layer of a trainable model; its output is the
/// class probabilities. On a sequence `Shape<T, K>` it takes one label per position (a language
/// model's next tokens) and the loss is the mean over all positions of the batch, as
/// nn.CrossEntropyLoss on the `[N*T, K]` logits.
struct SoftmaxCrossEntropy {
  template <class In>
  struct bind {
    static constexpr bool accepted = In::rank <= 2 && In::channels >= 2;
    static_assert(sizeof(std::conditional_t<accepted, char, softmax_cross_entropy_input_not_logits<In>>));
    static constexpr bool is_loss = true;
    static constexpr bool classifies = true;
    static constexpr std::size_t classes = In::channels;
    /// Labels per sample: one per position.
    static constexpr std::size_t label_size = In::positions;
    using input_shape = In;
    using output_shape = std::conditional_t<accepted, In, InvalidShape>;
    // Activations: the probabilities and the per-sample loss (the tape of detail::PerSampleLoss),
    // and each position's loss when there are several.
    static constexpr LayerCost cost{.forward_flops = 4 * In::size, .backward_flops = 2 * In::size,
                                    .activations = In::size + 1 + (In::positions > 1 ? In::positions : 0)};
    static constexpr bool in_place = false;
    static constexpr bool backward_reads_output = true;  // the gradient reads the probabilities
    static constexpr std::size_t leaves = 1;
    static std::string describe() {
      return "SoftmaxCrossEntropy(" + std::to_string(classes) + " classes" +
             (In::sequence ? " at each of " + std::to_string(In::positions) + " positions)" : std::string(")"));
    }
    template <class T, class Space>
    struct impl : detail::SoftmaxCrossEntropyImpl<T, Space> {
      impl() : detail::SoftmaxCrossEntropyImpl<T, Space>(In::positions) {}
    };
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_SOFTMAX_CROSS_ENTROPY_HPP
