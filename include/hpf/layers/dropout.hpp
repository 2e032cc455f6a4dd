// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DROPOUT_HPP
#define HPF_LAYERS_DROPOUT_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/meta/hash.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace hpf {

namespace detail {

/// \brief Dropout's mask, a pure function of where a value is, never of who computes it: value e
/// (= c * S + s in the `[C][S]` layout of a sample) of the sample with global index `sample` is
/// kept when the top 53 bits of
///   hash_combine(hash_combine(hash_combine(hash_combine(seed, layer), step), sample), e)
/// are at least `threshold` = ceil(p * 2^53). `layer` is fnv1a of the layer's name in the whole
/// model ("2.0.1.body.4."), `step` the engine's key of the optimizer step (epoch << 32 | step).
/// Any split of the batch over micro-batches, replicas or stages draws the same mask, and
/// backward recomputes it instead of storing it.
struct DropoutMask {
  std::uint64_t stream = 0;     ///< seed, layer and step combined
  std::uint64_t threshold = 0;  ///< values whose 53-bit draw is below it are dropped

  /// ceil(numerator / denominator * 2^53) in integers (exact for any ratio below 1).
  static constexpr std::uint64_t threshold_of(std::uint64_t numerator, std::uint64_t denominator) {
    constexpr std::uint64_t one = std::uint64_t{1} << 53;
    return numerator * (one / denominator) + (numerator * (one % denominator) + denominator - 1) / denominator;
  }
  KOKKOS_INLINE_FUNCTION bool keeps(std::uint64_t sample, std::uint64_t element) const {
    return (hash_combine(hash_combine(stream, sample), element) >> 11) >= threshold;
  }
};

template <class T, class Space>
class DropoutImpl {
 public:
  using tape_type = NoTape;

  DropoutImpl(std::uint64_t numerator, std::uint64_t denominator)
      : threshold_(DropoutMask::threshold_of(numerator, denominator)),
        // As PyTorch forms it: x * (1 / (1 - p)).
        scale_(T(1) / (T(1) - static_cast<T>(static_cast<double>(numerator) / static_cast<double>(denominator)))) {}

  void bind(ParameterBinder<T, Space>& binder) { layer_ = fnv1a(binder.scope()); }
  void reserve(tape_type&, std::size_t) {}
  std::size_t workspace(std::size_t) const { return 0; }

  /// The mask of a pass with `ctx`.
  DropoutMask mask(const Context<T, Space>& ctx) const {
    return {hash_combine(hash_combine(ctx.seed, layer_), ctx.step), threshold_};
  }

  // Kernels (public: CUDA forbids device lambdas in private member functions).
  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type&) const {
    trace::Region region("hpf::Dropout::forward");
    if (!ctx.training || threshold_ == 0) {  // evaluation: the identity
      Kokkos::deep_copy(ctx.space, y, x);
      return;
    }
    apply(ctx, x, y);
  }
  /// dx = dy * mask / (1 - p), the same mask drawn again.
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space>, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type&) const {
    if (is_empty(dx)) return;
    trace::Region region("hpf::Dropout::backward");
    if (threshold_ == 0) {
      Kokkos::deep_copy(ctx.space, dx, dy);
      return;
    }
    apply(ctx, dy, dx);
  }

  /// out = in * mask / (1 - p).
  void apply(const Context<T, Space>& ctx, ConstActivation<T, Space> in, Activation<T, Space> out) const {
    const std::size_t n = in.extent(1), s = in.extent(2);
    const DropoutMask m = mask(ctx);
    const T scale = scale_;
    const auto samples = ctx.samples;
    Kokkos::parallel_for(
        "hpf::Dropout", Kokkos::RangePolicy<Space>(ctx.space, 0, in.extent(0) * n * s), KOKKOS_LAMBDA(const std::size_t i) {
          const std::size_t c = i / (n * s), j = i / s % n, p = i % s;
          out(c, j, p) = m.keeps(samples(j), c * s + p) ? in(c, j, p) * scale : T(0);
        });
  }

 private:
  std::uint64_t threshold_;
  T scale_;
  std::uint64_t layer_ = 0;
};

}  // namespace detail

/// \brief Dropout with probability p = Numerator / Denominator (`Dropout<10>`: 10 %; `Dropout<1, 8>`):
/// in training, each value is zeroed with probability p and the rest scaled by 1 / (1 - p)
/// (PyTorch's nn.Dropout); in evaluation, the identity. The mask is a function of the network's
/// seed, the layer's place in the model, the optimizer step and each sample's global index (see
/// detail::DropoutMask), so every layout trains bit for bit alike with dropout on.
template <std::uint64_t Numerator, std::uint64_t Denominator = 100>
struct Dropout {
  static_assert(Denominator > 0 && Numerator < Denominator,
                "hpf::Dropout<Numerator, Denominator>: the probability must lie in [0, 1)");
  static_assert(Denominator <= (std::uint64_t{1} << 31), "hpf::Dropout: the denominator may be at most 2^31");

  template <class In>
  struct bind {
    using input_shape = In;
    using output_shape = In;
    static constexpr LayerCost cost{.forward_flops = In::size, .backward_flops = In::size, .activations = In::size};
    static constexpr bool backward_reads_output = false;
    static constexpr bool in_place = false;
    static constexpr std::size_t leaves = 1;
    static constexpr bool elementwise = true;  // may sit inside a DensePair
    static std::string describe() {
      return "Dropout(" + std::to_string(Numerator) + "/" + std::to_string(Denominator) + ")";
    }
    template <class T, class Space>
    struct impl : detail::DropoutImpl<T, Space> {
      impl() : detail::DropoutImpl<T, Space>(Numerator, Denominator) {}
    };
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_DROPOUT_HPP
