// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_EMBEDDING_HPP
#define HPF_LAYERS_EMBEDDING_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace hpf {

namespace detail {

/// Token embedding: `[T][N][1]` token ids (integers held as T values) -> `[D][N][T]`, row `token`
/// of a `[V, D]` table per position. A token outside [0, V) gives zeros and no gradient instead
/// of reading outside the table: datasets reject such tokens before training starts
/// (data::Dataset::token_sequences), so this only guards memory.
template <class T, class Space>
class EmbeddingImpl {
 public:
  using tape_type = NoTape;

  EmbeddingImpl(std::size_t vocabulary, std::size_t features) : vocabulary_(vocabulary), features_(features) {}

  void bind(ParameterBinder<T, Space>& binder) {
    auto w = binder.parameter("weight", {vocabulary_, features_}, InitRule::normal());
    weight_ = w.value;
    weight_grad_ = w.grad;
  }
  void reserve(tape_type&, std::size_t) {}
  std::size_t workspace(std::size_t) const { return 0; }

  /// Row of `x(t, j, 0)` in the table, or `vocabulary` when it is not a token id.
  KOKKOS_INLINE_FUNCTION static std::size_t row_of(T token, std::size_t vocabulary) {
    return token >= T(0) && token < static_cast<T>(vocabulary) ? static_cast<std::size_t>(token) : vocabulary;
  }

  // Kernels (public: CUDA forbids device lambdas in private member functions).
  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type&) const {
    trace::Region region("hpf::Embedding::forward");
    const std::size_t positions = x.extent(0), n = x.extent(1), d_count = features_, vocabulary = vocabulary_;
    const auto weight = weight_;
    // One work item per (feature, sample) row of positions: no divisions per value.
    Kokkos::parallel_for(
        "hpf::Embedding::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, d_count * n),
        KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t d = item / n, j = item % n;
          for (std::size_t t = 0; t < positions; ++t) {
            const std::size_t row = row_of(x(t, j, 0), vocabulary);
            y(d, j, t) = row < vocabulary ? weight(row * d_count + d) : T(0);
          }
        });
  }

  /// Gradient rows of the tokens used: one thread per feature adds its column over the batch's
  /// positions in order, so no two threads write one value and the sum's order is fixed.
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type&) const {
    trace::Region region("hpf::Embedding::backward");
    const std::size_t positions = x.extent(0), n = x.extent(1), d_count = features_, vocabulary = vocabulary_;
    const auto weight_grad = weight_grad_;
    Kokkos::parallel_for(
        "hpf::Embedding::backward", Kokkos::RangePolicy<Space>(ctx.space, 0, d_count), KOKKOS_LAMBDA(const std::size_t d) {
          for (std::size_t j = 0; j < n; ++j) {
            for (std::size_t t = 0; t < positions; ++t) {
              const std::size_t row = row_of(x(t, j, 0), vocabulary);
              if (row < vocabulary) weight_grad(row * d_count + d) += dy(d, j, t);
            }
          }
        });
    if (!is_empty(dx)) Kokkos::deep_copy(ctx.space, dx, T(0));  // token ids have no gradient
  }

 private:
  std::size_t vocabulary_, features_;
  Vector<T, Space> weight_, weight_grad_;
};

}  // namespace detail

template <class In>
struct embedding_input_not_tokens {
  static_assert(In::rank == 1,
                "hpf::Embedding: the input must be a vector Shape<T> of T token ids (the model's input)");
};

/// \brief Token embedding (PyTorch nn.Embedding(Vocabulary, D); weight `[Vocabulary, D]`, N(0, 1)).
/// Its input `Shape<T>` holds T token ids per sample, its output is the sequence `Shape<T, D>`.
/// The gradient reaches only the rows of the tokens used.
/// \tparam Vocabulary number of token ids (a byte-level model: 256)
/// \tparam D features per position
template <std::size_t Vocabulary, std::size_t D>
struct Embedding {
  template <class In>
  struct bind {
    static_assert(Vocabulary > 0 && D > 0, "hpf::Embedding: the vocabulary and the feature count must be positive");
    static constexpr bool accepted = Vocabulary > 0 && D > 0 && In::rank == 1;
    static_assert(sizeof(std::conditional_t<accepted, char, embedding_input_not_tokens<In>>));
    /// Token ids it reads: the data's input values must lie in [0, vocabulary) (checked before training).
    static constexpr std::size_t vocabulary = Vocabulary;
    using input_shape = In;
    using output_shape = std::conditional_t<accepted, Shape<In::size, D>, InvalidShape>;
    static constexpr LayerCost cost{.parameters = Vocabulary * D, .forward_flops = 0,
                                    .backward_flops = In::size * D, .activations = In::size * D};
    static constexpr bool backward_reads_output = false;
    static constexpr bool in_place = false;
    static constexpr std::size_t leaves = 1;
    static std::string describe() {
      return "Embedding(" + std::to_string(Vocabulary) + " tokens -> " + std::to_string(D) + ")";
    }
    template <class T, class Space>
    struct impl : detail::EmbeddingImpl<T, Space> {
      impl() : detail::EmbeddingImpl<T, Space>(Vocabulary, D) {}
    };
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_EMBEDDING_HPP
