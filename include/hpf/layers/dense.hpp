// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DENSE_HPP
#define HPF_LAYERS_DENSE_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/detail/gemm.hpp>
#include <hpf/layers/detail/reduce.hpp>
#include <hpf/layers/detail/rows.hpp>
#include <hpf/layers/detail/split_dense.hpp>
#include <hpf/layers/options.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace hpf {

namespace detail {

/// Fully connected layer on `[In][N][S]` activations (S positions per sample, 1 for vectors):
/// y = W x + b at every position, W is PyTorch's `[out, in]`.
template <class T, class Space>
class DenseImpl {
 public:
  using tape_type = NoTape;

  DenseImpl(std::size_t in, std::size_t out, bool bias) : in_(in), out_(out), bias_(bias) {}

  void bind(ParameterBinder<T, Space>& binder) {
    const KernelResources& kernels = binder.kernels();
    gemm_ = Gemm<T, Space>(kernels);
    if (kernels.split.divides_layers()) {
      split_ = SplitDense<T, Space>(kernels.layer_group<T, Space>(), kernels.split.kind, binder.pair_role(), in_, out_, gemm_);
    }
    auto w = binder.parameter("weight", {out_, in_}, InitRule::weight(in_, out_));
    weight_ = Matrix<T, Space>(w.value.data(), out_, in_);
    weight_grad_ = Matrix<T, Space>(w.grad.data(), out_, in_);
    if (bias_) {
      auto b = binder.parameter("bias", {out_}, InitRule::uniform_fan_in(in_));
      bias_value_ = b.value;
      bias_grad_ = b.grad;
    }
  }
  void reserve(tape_type&, std::size_t) {}
  std::size_t workspace(std::size_t) const { return 0; }

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type&) const {
    trace::Region region("hpf::Dense::forward");
    const auto out = as_matrix(y);
    if (split_) {
      split_.forward(ctx.space, weight_, bias_value_, as_matrix(x), out);
      return;
    }
    if (bias_) broadcast_rows(ctx.space, bias_value_, out, "hpf::Dense::bias");  // then y += W x, as addmm
    gemm_("N", "N", T(1), weight_, as_matrix(x), bias_ ? T(1) : T(0), out);
  }

  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type&) const {
    trace::Region region("hpf::Dense::backward");
    const auto grad_out = as_matrix(dy);
    if (split_) {
      split_.backward(ctx.space, weight_, weight_grad_, bias_grad_, as_matrix(x), grad_out, as_matrix(dx));
      return;
    }
    gemm_("N", "T", T(1), grad_out, as_matrix(x), T(1), weight_grad_);  // dW += dY X^T
    if (bias_) add_row_sums(ctx.space, grad_out, bias_grad_, "hpf::Dense::bias_grad");
    if (!is_empty(dx)) gemm_("T", "N", T(1), weight_, grad_out, T(0), as_matrix(dx));  // dX = W^T dY
  }

 private:
  std::size_t in_, out_;
  Gemm<T, Space> gemm_;
  SplitDense<T, Space> split_;  // empty unless NetworkOptions::split splits the layers
  bool bias_;
  Matrix<T, Space> weight_, weight_grad_;
  Vector<T, Space> bias_value_, bias_grad_;
};

}  // namespace detail

template <class In>
struct dense_input_not_a_vector {
  static_assert(In::rank <= 2,
                "hpf::Dense: the input must be a vector Shape<F> or a sequence Shape<T, D>; put hpf::Flatten or "
                "hpf::GlobalAvgPool before a Dense layer that follows image-shaped layers");
};

/// \brief Fully connected layer with `Out` outputs (PyTorch nn.Linear; weight `[Out, in]`).
/// On a vector `Shape<F>` it gives `Shape<Out>`; on a sequence `Shape<T, D>` it applies to each
/// position, giving `Shape<T, Out>` (as nn.Linear on `[N, T, D]`): one GEMM covers the batch's
/// N*T positions. Put Flatten (or GlobalAvgPool) in front of image-shaped activations.
/// \tparam Out output features
/// \tparam Options NoBias to leave out the bias
template <std::size_t Out, class... Options>
struct Dense {
  static constexpr bool has_bias = bias_option_v<Options...>;

  template <class In>
  struct bind {
    // Parameter checks in bind, where layer_in_model<I, ...> names the layer's position.
    static_assert(Out > 0, "hpf::Dense: the number of outputs must be positive");
    static_assert(((std::is_same_v<Options, NoBias>) && ...), "hpf::Dense: the only option is hpf::NoBias");
    static constexpr bool accepted = Out > 0 && In::rank <= 2;
    static_assert(sizeof(std::conditional_t<accepted, char, dense_input_not_a_vector<In>>));
    using input_shape = In;
    using output_shape = std::conditional_t<accepted, std::conditional_t<In::sequence, Shape<In::positions, Out>, Shape<Out>>,
                                            InvalidShape>;
    static constexpr std::size_t in_features = In::channels, positions = In::positions;
    static constexpr LayerCost cost = product_cost(Out, in_features, positions, positions * in_features, has_bias);
    static constexpr bool backward_reads_output = false;
    static constexpr bool in_place = false;
    static constexpr std::size_t leaves = 1;
    static constexpr bool is_dense = true;  // may begin or end a DensePair
    static std::string describe() {
      return "Dense(" + std::string(In::sequence ? "per position, " : "") + std::to_string(in_features) + " -> " +
             std::to_string(Out) + (has_bias ? ")" : ", no bias)");
    }
    template <class T, class Space>
    struct impl : detail::DenseImpl<T, Space> {
      impl() : detail::DenseImpl<T, Space>(in_features, Out, has_bias) {}
    };
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_DENSE_HPP
