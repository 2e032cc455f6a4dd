// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_POSITION_EMBEDDING_HPP
#define HPF_LAYERS_POSITION_EMBEDDING_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace hpf {

namespace detail {

/// y(d, j, t) = x(d, j, t) + weight(t, d) on `[D][N][T]`.
template <class T, class Space>
class PositionEmbeddingImpl {
 public:
  using tape_type = NoTape;

  PositionEmbeddingImpl(std::size_t positions, std::size_t features) : positions_(positions), features_(features) {}

  void bind(ParameterBinder<T, Space>& binder) {
    auto w = binder.parameter("weight", {positions_, features_}, InitRule::normal());
    weight_ = w.value;
    weight_grad_ = w.grad;
  }
  void reserve(tape_type&, std::size_t) {}
  std::size_t workspace(std::size_t) const { return 0; }

  // Kernels (public: CUDA forbids device lambdas in private member functions).
  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type&) const {
    trace::Region region("hpf::PositionEmbedding::forward");
    const std::size_t d_count = x.extent(0), n = x.extent(1), positions = x.extent(2);
    const auto weight = weight_;
    // One work item per (feature, sample) row of positions: no divisions per value.
    Kokkos::parallel_for(
        "hpf::PositionEmbedding::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, d_count * n),
        KOKKOS_LAMBDA(const std::size_t row) {
          const std::size_t d = row / n, j = row % n;
          for (std::size_t t = 0; t < positions; ++t) y(d, j, t) = x(d, j, t) + weight(t * d_count + d);
        });
  }

  /// dx = dy; weight(t, d) gathers dy(d, j, t) over the samples j in order, one thread per value.
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space>, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type&) const {
    trace::Region region("hpf::PositionEmbedding::backward");
    const std::size_t d_count = dy.extent(0), n = dy.extent(1), positions = dy.extent(2);
    const auto weight_grad = weight_grad_;
    Kokkos::parallel_for(
        "hpf::PositionEmbedding::backward", Kokkos::RangePolicy<Space>(ctx.space, 0, d_count * positions),
        KOKKOS_LAMBDA(const std::size_t e) {
          const std::size_t d = e / positions, t = e % positions;
          T sum = 0;
          for (std::size_t j = 0; j < n; ++j) sum += dy(d, j, t);
          weight_grad(t * d_count + d) += sum;
        });
    if (!is_empty(dx)) Kokkos::deep_copy(ctx.space, dx, dy);
  }

 private:
  std::size_t positions_, features_;
  Vector<T, Space> weight_, weight_grad_;
};

}  // namespace detail

template <class In>
struct position_embedding_input_not_a_sequence {
  static_assert(In::sequence, "hpf::PositionEmbedding: the input must be a sequence Shape<T, D> (e.g. an Embedding's output)");
};

/// \brief Learned position embedding: adds a trainable `[T, D]` table to a sequence `Shape<T, D>`
/// (GPT-2's wpe; in PyTorch `x + self.weight` with `self.weight = nn.Parameter(torch.randn(T, D))`,
/// parameter "weight", N(0, 1) as nn.Embedding's).
struct PositionEmbedding {
  template <class In>
  struct bind {
    static constexpr bool accepted = In::sequence;
    static_assert(sizeof(std::conditional_t<accepted, char, position_embedding_input_not_a_sequence<In>>));
    using input_shape = In;
    using output_shape = std::conditional_t<accepted, In, InvalidShape>;
    static constexpr LayerCost cost{.parameters = In::size, .forward_flops = In::size, .backward_flops = In::size,
                                    .activations = In::size};
    static constexpr bool backward_reads_output = false;
    static constexpr bool in_place = false;
    static constexpr std::size_t leaves = 1;
    static std::string describe() {
      return "PositionEmbedding(" + std::to_string(In::positions) + " x " + std::to_string(In::channels) + ")";
    }
    template <class T, class Space>
    struct impl : detail::PositionEmbeddingImpl<T, Space> {
      impl() : detail::PositionEmbeddingImpl<T, Space>(In::positions, In::channels) {}
    };
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_POSITION_EMBEDDING_HPP
