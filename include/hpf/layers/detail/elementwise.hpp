// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_ELEMENTWISE_HPP
#define HPF_LAYERS_DETAIL_ELEMENTWISE_HPP

#include <hpf/tensor/blocks.hpp>
#include <hpf/tensor/views.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace hpf::detail {

/// max(v, 0) as hpf::ReLU computes it: every layer that applies a ReLU uses this, so fused and
/// separate layers give the same bits.
template <class T>
KOKKOS_INLINE_FUNCTION T relu(T v) {
  return v > T(0) ? v : T(0);
}

/// v, or with Relu relu(v): a layer that may apply a ReLU after its own result.
template <bool Relu, class T>
KOKKOS_INLINE_FUNCTION T relu_if(T v) {
  if constexpr (Relu) return relu(v);
  return v;
}

/// `keep ? value : T(0)`, the same bits, without a branch on the host: inside a reduction's
/// unrolled lanes a select became a branch per element and stopped the compiler vectorising
/// (BatchNorm's backward with a ReLU mask ran 25x slower).
template <class T>
KOKKOS_INLINE_FUNCTION T kept_or_zero(T value, bool keep) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return keep ? value : T(0);
#else
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  static_assert(sizeof(Bits) == sizeof(T), "kept_or_zero: float or double");
  Bits bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits &= Bits(0) - Bits(keep);  // all ones or none; +0.0 is all zero bits
  std::memcpy(&value, &bits, sizeof bits);
  return value;
#endif
}
/// The gradient through a ReLU whose output is `relu_output` (positive exactly where its input was).
template <class T>
KOKKOS_INLINE_FUNCTION T relu_gradient(T grad_output, T relu_output) {
  return kept_or_zero(grad_output, relu_output > T(0));
}

/// a + b, or with Relu relu(a + b). (A function, not an `if constexpr` in the kernel: nvcc's
/// device lambdas may not first capture a variable inside one.)
template <bool Relu, class T>
KOKKOS_INLINE_FUNCTION T sum_or_relu(T a, T b) {
  if constexpr (Relu) return relu(a + b);
  return a + b;
}

/// out = a + b over contiguous views of equal size (out may alias a or b); with Relu, relu(a + b).
template <bool Relu = false, class Space, class A, class B, class Out>
void add(const Space& space, const A& a, const B& b, const Out& out, const char* label) {
  const auto* pa = a.data();
  const auto* pb = b.data();
  auto* po = out.data();
  for_each_block(space, out.size(), label, KOKKOS_LAMBDA(const std::size_t begin, const std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) po[i] = sum_or_relu<Relu>(pa[i], pb[i]);
  });
}

/// into += from over contiguous views of equal size.
template <class Space, class From, class Into>
void accumulate(const Space& space, const From& from, const Into& into, const char* label) {
  const auto* pf = from.data();
  auto* pi = into.data();
  for_each_block(space, into.size(), label, KOKKOS_LAMBDA(const std::size_t begin, const std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) pi[i] += pf[i];
  });
}

/// into += the gradient through a ReLU (grad_output where relu_output > 0, as ReLU's backward
/// forms it), over contiguous views of equal size.
template <class Space, class Gradient, class Output, class Into>
void accumulate_relu_gradient(const Space& space, const Gradient& grad_output, const Output& relu_output,
                              const Into& into, const char* label) {
  const auto* pg = grad_output.data();
  const auto* po = relu_output.data();
  auto* pi = into.data();
  for_each_block(space, into.size(), label, KOKKOS_LAMBDA(const std::size_t begin, const std::size_t end) {
    const auto* g = pg;  // locals: a store through d could alias the lambda's members
    const auto* o = po;
    auto* d = pi;
    for (std::size_t i = begin; i < end; ++i) d[i] += relu_gradient(g[i], o[i]);
  });
}

/// values *= factor over a contiguous view.
template <class Space, class View>
void scale(const Space& space, const View& values, typename View::non_const_value_type factor, const char* label) {
  auto* p = values.data();
  for_each_block(space, values.size(), label, KOKKOS_LAMBDA(const std::size_t begin, const std::size_t end) {
    const auto f = factor;  // a local: a store to p could alias the lambda's member (see Sgd)
    for (std::size_t i = begin; i < end; ++i) p[i] *= f;
  });
}

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_ELEMENTWISE_HPP
