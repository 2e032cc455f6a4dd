// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_GELU_HPP
#define HPF_LAYERS_GELU_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/detail/elementwise.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/tensor/math.hpp>
#include <hpf/tensor/vector_math.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <type_traits>

namespace hpf {

/// The two forms of PyTorch's nn.GELU: `approximate='none'` and `approximate='tanh'`.
enum class GeluForm { exact, tanh };

namespace detail {

/// GELU and its derivative as PyTorch's CPU kernels write them (aten/src/ATen/native/cpu/
/// Activation.cpp), term for term, so that double agrees to the last bits the math library allows.
// PyTorch's constants, formed as it forms them (products of <cmath>'s M_ values in double).
inline constexpr double gelu_sqrt1_2 = 0.70710678118654752440;                         // M_SQRT1_2
inline constexpr double gelu_pdf_scale = 1.12837916709551257390 * 0.70710678118654752440 * 0.5;  // 1/sqrt(2 pi)
inline constexpr double gelu_tanh_beta = 1.41421356237309504880 * 1.12837916709551257390 * 0.5;  // sqrt(2/pi)
inline constexpr double gelu_tanh_kappa = 0.044715;

/// tanh for the GELU's float kernels: the rational minimax approximation of degree 13/6 of Eigen's
/// fast tanh, and +-1 from +-7.9053 on (where tanh is within 3e-7 of it): within 4e-7 of tanh
/// everywhere, and, unlike a call to tanhf, it vectorises (math::clamp_magnitude says why the
/// clamp is not a comparison), which makes a GPT's GELUs about 7x faster. Double keeps the exact
/// function, so double agrees with PyTorch to the last bits.
///
/// The ends are exactly +-1, not the rational's value there: with fused multiply-adds (GCC forms
/// them at -O2 and above) that came out a few ulps short of 1, and the derivative's 1 - tanh^2,
/// multiplied by up to 30 at x = -8, was 1.4e-5 off a slope of 0.
template <class T>
KOKKOS_INLINE_FUNCTION T gelu_tanh(T u) {
  if constexpr (std::is_same_v<T, float>) {
    constexpr float saturated = 7.90531110763549805f;
    const float x = math::clamp_magnitude(u, saturated);
    const float x2 = x * x;
    float p = -2.76076847742355e-16f;
    p = p * x2 + 2.00018790482477e-13f;
    p = p * x2 + -8.60467152213735e-11f;
    p = p * x2 + 5.12229709037114e-08f;
    p = p * x2 + 1.48572235717979e-05f;
    p = p * x2 + 6.37261928875436e-04f;
    p = p * x2 + 4.89352455891786e-03f;
    float q = 1.19825839466702e-06f;
    q = q * x2 + 1.18534705686654e-04f;
    q = q * x2 + 2.26843463243900e-03f;
    q = q * x2 + 4.89352518554385e-03f;
    return math::unit_beyond(u, saturated, x * p / q);
  } else {
    return math::tanh(u);
  }
}

template <GeluForm Form, class T>
KOKKOS_INLINE_FUNCTION T gelu(T x) {
  if constexpr (Form == GeluForm::exact) {
    return x * T(0.5) * (T(1) + math::erf(x * T(gelu_sqrt1_2)));
  } else {
    const T x_cube = x * x * x;
    const T inner = T(gelu_tanh_beta) * (x + T(gelu_tanh_kappa) * x_cube);
    return T(0.5) * x * (T(1) + gelu_tanh(inner));
  }
}
template <GeluForm Form, class T>
KOKKOS_INLINE_FUNCTION T gelu_derivative(T x) {
  if constexpr (Form == GeluForm::exact) {
    const T cdf = T(0.5) * (T(1) + math::erf(x * T(gelu_sqrt1_2)));
    const T pdf = T(gelu_pdf_scale) * math::exp(x * x * T(-0.5));
    return cdf + x * pdf;
  } else {
    const T x_sq = x * x;
    const T x_cube = x_sq * x;
    const T tanh_inner = gelu_tanh(T(gelu_tanh_beta) * (x + T(gelu_tanh_kappa) * x_cube));
    const T left = T(0.5) * x, right = T(1) + tanh_inner;
    const T tanh_derivative = T(1) - tanh_inner * tanh_inner;
    const T inner_derivative = T(gelu_tanh_beta) * (T(1) + T(3) * T(gelu_tanh_kappa) * x_sq);
    return T(0.5) * right + left * tanh_derivative * inner_derivative;
  }
}

template <GeluForm Form, class T, class Space>
struct GeluImpl : public ParameterFreeLayer {
  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type&) const {
    trace::Region region("hpf::GELU::forward");
    const T* in = x.data();
    T* out = y.data();
    for_each_block(ctx.space, x.size(), "hpf::GELU::forward", KOKKOS_LAMBDA(const std::size_t begin, const std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) out[i] = gelu<Form>(in[i]);
    });
  }
  /// Uses the input (the output does not determine it: GELU is not monotonic below -0.75).
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type&) const {
    if (is_empty(dx)) return;
    trace::Region region("hpf::GELU::backward");
    const T* in = x.data();
    const T* grad_out = dy.data();
    T* grad_in = dx.data();
    for_each_block(ctx.space, x.size(), "hpf::GELU::backward", KOKKOS_LAMBDA(const std::size_t begin, const std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) grad_in[i] = grad_out[i] * gelu_derivative<Form>(in[i]);
    });
  }
};
}  // namespace detail

/// \brief Gaussian error linear unit, x * Phi(x), on any shape (PyTorch nn.GELU): `BasicGELU<
/// GeluForm::exact>` (`hpf::GELU`) with erf, `BasicGELU<GeluForm::tanh>` (`hpf::GELUTanh`) with
/// the tanh approximation GPT-2 and BERT were trained with.
template <GeluForm Form>
struct BasicGELU {
  template <class In>
  struct bind {
    using input_shape = In;
    using output_shape = In;
    // Per element: a transcendental function and 4-8 multiply-adds each way (counted as 8 and 16).
    static constexpr LayerCost cost{.forward_flops = 8 * In::size, .backward_flops = 16 * In::size,
                                    .activations = In::size};
    static constexpr std::size_t leaves = 1;
    static constexpr bool in_place = false;  // backward reads the input
    static constexpr bool backward_reads_output = false;
    static constexpr bool takes_spatial_parts = true;  // elementwise
    static constexpr bool elementwise = true;         // may sit inside a DensePair
    static std::string describe() { return Form == GeluForm::exact ? "GELU" : "GELU(tanh)"; }
    template <class T, class Space>
    using impl = detail::GeluImpl<Form, T, Space>;
  };
};

/// GELU with erf (PyTorch nn.GELU()).
using GELU = BasicGELU<GeluForm::exact>;
/// GELU's tanh approximation (PyTorch nn.GELU(approximate='tanh')).
using GELUTanh = BasicGELU<GeluForm::tanh>;

}  // namespace hpf

#endif  // HPF_LAYERS_GELU_HPP
