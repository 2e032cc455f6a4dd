// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_SOFTMAX_CROSS_ENTROPY_HPP
#define HPF_LAYERS_SOFTMAX_CROSS_ENTROPY_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/loss.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/tensor/blocks.hpp>
#include <hpf/tensor/math.hpp>
#include <hpf/tensor/vector_math.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace hpf {

namespace detail {

/// Positions per parallel iteration of the loss on `[K][N][P]`: on the host a block of B
/// consecutive positions of one sample, whose loops run over the classes outside and the block's
/// positions (contiguous) inside, so that they vectorise (per position, the classes are N*P
/// apart). 32 ran faster than 16 or 8: with math::vector_exp the GPT benchmark's loss (K 256, P 64,
/// N 32) took 0.9 ms forward of an 85 ms step, from 13 of 105 a position at a time with
/// std::exp. Blocks start at multiples of B within a sample, so a position's arithmetic depends
/// on P and p only, never on N: every split of a batch gives the same bits. P == 1 (a
/// classifier) keeps one sample per iteration, and std::exp. On a device one position per
/// thread: neighbouring threads read neighbouring positions.
template <class Space>
constexpr std::size_t loss_positions_per_block() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space_t<Space>>::accessible ? 32 : 1;
}

/// e^x in a block of positions: math::vector_exp for several, math::exp for one (a classifier keeps
/// its bits; a device's is math::exp either way).
template <std::size_t Block, class T>
KOKKOS_INLINE_FUNCTION T block_exp(T x) {
  if constexpr (Block > 1) return math::vector_exp(x);
  return math::exp(x);
}

/// Class indices as wide as T, so that they share the vectors of the values.
template <class T>
using class_index_t = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;

/// The first largest value (as torch.argmax) at each of `count` positions of a block (b: its
/// first class's values; the classes `stride` apart), and its class.
template <std::size_t Block, class T>
KOKKOS_FORCEINLINE_FUNCTION void block_argmax(const T* b, std::size_t stride, std::size_t classes, std::size_t count,
                                              T (&largest)[Block], class_index_t<T> (&top)[Block]) {
  using Index = class_index_t<T>;
  for (std::size_t i = 0; i < count; ++i) largest[i] = b[i];
  for (std::size_t k = 1; k < classes; ++k) {
    const T* const bk = b + k * stride;
    for (std::size_t i = 0; i < count; ++i) {
      const bool above = bk[i] > largest[i];
      top[i] = above ? static_cast<Index>(k) : top[i];
      largest[i] = above ? bk[i] : largest[i];
    }
  }
}

/// The softmax of a block of positions (xb and yb: its first class's values; the classes
/// `stride` apart), and each position's largest logit and sum of the others' exps. Lanes: a full
/// block's positions, or 0 for a sample's last `lanes` when fewer; a constant count vectorises
/// without a remainder loop (the forward ran 15 % faster). max_logit and others start at 0.
template <std::size_t Block, std::size_t Lanes, class T>
KOKKOS_FORCEINLINE_FUNCTION void softmax_block(const T* xb, T* yb, std::size_t stride, std::size_t classes,
                                               std::size_t lanes, T (&max_logit)[Block], T (&others)[Block]) {
  using Index = class_index_t<T>;
  const std::size_t count = Lanes > 0 ? Lanes : lanes;
  // The largest logit's exp(0) = 1 is kept out of the sum of the others: a well-learnt
  // sample's loss is log1p(others), which 1 + others would round to float's ulp of 1 (and
  // max + log(sum) - logit to the logit's ulp): up to 5 % of a loss of 3e-5.
  Index top[Block] = {};
  block_argmax(xb, stride, classes, count, max_logit, top);
  for (std::size_t k = 0; k < classes; ++k) {
    const T* const xk = xb + k * stride;
    T* const yk = yb + k * stride;
    for (std::size_t i = 0; i < count; ++i) {
      const T e_k = block_exp<Block>(xk[i] - max_logit[i]);
      yk[i] = e_k;
      others[i] += top[i] != static_cast<Index>(k) ? e_k : T(0);
    }
  }
  T inv[Block] = {};
  for (std::size_t i = 0; i < count; ++i) inv[i] = T(1) / (T(1) + others[i]);
  for (std::size_t k = 0; k < classes; ++k) {
    T* const yk = yb + k * stride;
    for (std::size_t i = 0; i < count; ++i) yk[i] *= inv[i];
  }
}

/// Softmax, and with labels each position's loss, over blocks of Block positions (see
/// loss_positions_per_block).
template <std::size_t Block, class T, class Space>
void softmax_cross_entropy_forward(const Space& space, ConstActivation<T, Space> x, Activation<T, Space> y,
                                   LabelView<Space> labels, Buffer<T, Space> losses, bool with_labels) {
  const std::size_t classes = x.extent(0), n = x.extent(1), positions = x.extent(2);
  const std::size_t blocks = (positions + Block - 1) / Block, stride = n * positions;
  const T* const xs = x.data();
  T* const ys = y.data();
  Kokkos::parallel_for(
      "hpf::SoftmaxCrossEntropy::forward", Kokkos::RangePolicy<Space>(space, 0, n * blocks),
      KOKKOS_LAMBDA(const std::size_t b) {
        const std::size_t p0 = (b % blocks) * Block, first = (b / blocks) * positions + p0;
        const std::size_t lanes = positions - p0 < Block ? positions - p0 : Block;
        T max_logit[Block] = {}, others[Block] = {};  // = {}: see softmax_cross_entropy_correct
        if (lanes == Block) {
          softmax_block<Block, Block>(xs + first, ys + first, stride, classes, lanes, max_logit, others);
        } else {
          softmax_block<Block, 0>(xs + first, ys + first, stride, classes, lanes, max_logit, others);
        }
        if (!with_labels) return;
        for (std::size_t i = 0; i < lanes; ++i) {
          const auto label = static_cast<std::size_t>(labels(first + i));
          losses(first + i) = (max_logit[i] - xs[first + label * stride + i]) + math::log1p(others[i]);
        }
      });
}

/// dx = (softmax - onehot(label)) * scale, element by element: over each class's N*P contiguous
/// values in blocks (one element per thread on a device). Position by position, over classes N*P
/// apart, the GPT benchmark's took 6 ms; 0.5 so.
template <class T, class Space>
void softmax_cross_entropy_backward(const Space& space, ConstActivation<T, Space> y, LabelView<Space> labels, T scale,
                                    Activation<T, Space> dx) {
  const std::size_t classes = y.extent(0), stride = y.extent(1) * y.extent(2);
  constexpr std::size_t block = elements_per_block<Space>();
  const std::size_t blocks = (stride + block - 1) / block;
  const T* const ys = y.data();
  T* const dxs = dx.data();
  const std::int32_t* const label_data = labels.data();
  Kokkos::parallel_for(
      "hpf::SoftmaxCrossEntropy::backward", Kokkos::RangePolicy<Space>(space, 0, classes * blocks),
      KOKKOS_LAMBDA(const std::size_t b) {
        const std::size_t k = b / blocks, begin = (b % blocks) * block;
        const std::size_t end = begin + block < stride ? begin + block : stride;
        const auto label = static_cast<std::int32_t>(k);
        const T* const yk = ys + k * stride;
        T* const dxk = dxs + k * stride;
        for (std::size_t e = begin; e < end; ++e) dxk[e] = (yk[e] - (label_data[e] == label ? T(1) : T(0))) * scale;
      });
}

/// Labels whose most probable class (first maximum, as torch.argmax) is the label, over blocks
/// of Block positions.
template <std::size_t Block, class T, class Space>
std::size_t softmax_cross_entropy_correct(const Space& space, ConstActivation<T, Space> y, LabelView<Space> labels) {
  const std::size_t classes = y.extent(0), n = y.extent(1), positions = y.extent(2);
  const std::size_t blocks = (positions + Block - 1) / Block, stride = n * positions;
  const T* const ys = y.data();
  using Index = class_index_t<T>;
  std::size_t hits = 0;
  Kokkos::parallel_reduce(
      "hpf::SoftmaxCrossEntropy::correct", Kokkos::RangePolicy<Space>(space, 0, n * blocks),
      KOKKOS_LAMBDA(const std::size_t b, std::size_t& acc) {
        const std::size_t p0 = (b % blocks) * Block, first = (b / blocks) * positions + p0;
        const std::size_t lanes = positions - p0 < Block ? positions - p0 : Block;
        const T* const yb = ys + first;
        T best_value[Block] = {};  // = {}: at -O1 GCC warned of lanes it could not see were set
        Index best[Block] = {};
        block_argmax(yb, stride, classes, lanes, best_value, best);
        for (std::size_t i = 0; i < lanes; ++i) acc += best[i] == static_cast<Index>(labels(first + i)) ? 1 : 0;
      },
      hits);
  return hits;
}

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
    const std::size_t n = x.extent(1), positions = x.extent(2);
    const bool with_labels = ctx.labels.extent(0) >= n * positions;
    // One position's loss straight into its sample's slot when there is one position per sample.
    const auto losses = positions > 1 ? tape.position_losses : tape.losses;
    constexpr std::size_t block = loss_positions_per_block<Space>();
    if (positions > 1) {
      softmax_cross_entropy_forward<block>(ctx.space, x, y, ctx.labels, losses, with_labels);
    } else {
      softmax_cross_entropy_forward<1>(ctx.space, x, y, ctx.labels, losses, with_labels);
    }
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
    const T scale = ctx.loss_scale / static_cast<T>(y.extent(2));
    softmax_cross_entropy_backward(ctx.space, y, ctx.labels, scale, dx);
  }

  /// Labels (samples, or positions) whose most probable class (first maximum, as torch.argmax)
  /// is the label.
  std::size_t correct(const Context<T, Space>& ctx, ConstActivation<T, Space> y) const {
    constexpr std::size_t block = loss_positions_per_block<Space>();
    if (y.extent(2) > 1) return softmax_cross_entropy_correct<block>(ctx.space, y, ctx.labels);
    return softmax_cross_entropy_correct<1>(ctx.space, y, ctx.labels);
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
