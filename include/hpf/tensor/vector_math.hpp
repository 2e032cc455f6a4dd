// SPDX-License-Identifier: MIT
#ifndef HPF_TENSOR_VECTOR_MATH_HPP
#define HPF_TENSOR_VECTOR_MATH_HPP

#include <hpf/tensor/math.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

namespace hpf::math {

// float functions written so that GCC vectorises the loops that call them. Two things keep a host
// loop scalar without -ffast-math: a call to a libm function (expf, tanhf), and a selection on a
// float comparison (a ? b : c, std::min), which GCC does not if-convert under -ftrapping-math, its
// default. Integer and bit operations it vectorises, so these use them instead.

/// u with its magnitude limited to `limit` (> 0): non-negative floats order as their bits do.
/// NaN becomes +-limit on the host (and stays NaN on a device, whose comparisons cost nothing).
KOKKOS_INLINE_FUNCTION float clamp_magnitude(float u, float limit) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return u < -limit ? -limit : (u > limit ? limit : u);
#else
  std::uint32_t bits = 0, limit_bits = 0;
  std::memcpy(&bits, &u, sizeof bits);
  std::memcpy(&limit_bits, &limit, sizeof limit_bits);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  bits = (magnitude < limit_bits ? magnitude : limit_bits) | (bits & 0x80000000u);
  float clamped = 0;
  std::memcpy(&clamped, &bits, sizeof clamped);
  return clamped;
#endif
}

/// value where |u| < limit (> 0), else +-1 with u's sign: a function's saturated end, without
/// a selection on a float comparison (the magnitudes compare as bits). NaN u gives +-1 on the
/// host, as clamp_magnitude's +-limit would.
KOKKOS_INLINE_FUNCTION float unit_beyond(float u, float limit, float value) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return u <= -limit ? -1.0f : (u >= limit ? 1.0f : value);
#else
  std::uint32_t bits = 0, limit_bits = 0, value_bits = 0;
  std::memcpy(&bits, &u, sizeof bits);
  std::memcpy(&limit_bits, &limit, sizeof limit_bits);
  std::memcpy(&value_bits, &value, sizeof value_bits);
  const std::uint32_t inside = 0u - std::uint32_t((bits & 0x7fffffffu) < limit_bits);  // all ones or none
  const std::uint32_t unit = 0x3f800000u | (bits & 0x80000000u);
  value_bits = (value_bits & inside) | (unit & ~inside);
  std::memcpy(&value, &value_bits, sizeof value);
  return value;
#endif
}

/// e^x. float on the host: Cody-Waite reduction and Cephes' polynomial, at most 1.01 ulp from e^x
/// with or without FMA contraction; results below float's range round to 0 (subnormals as
/// std::exp's), above it inf, NaN stays NaN. double, and any device: math::exp (double is
/// checked against PyTorch to the last bits).
KOKKOS_INLINE_FUNCTION double vector_exp(double x) { return exp(x); }
KOKKOS_INLINE_FUNCTION float vector_exp(float x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return exp(x);
#else
  // n = round(x / ln 2), by adding 1.5 * 2^23: n is then t's low mantissa bits. No conversion
  // to int, which is undefined for the inf and NaN that this lets through to the end.
  constexpr float shifter = 12582912.0f;
  const float t = x * 1.44269504088896341f + shifter;
  const float n = t - shifter;
  // r = x - n ln 2 in [-ln 2 / 2, ln 2 / 2], with ln 2 in two parts: n times the first is exact.
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  // e^x = p 2^n, as p 2^(n/2) 2^(n - n/2): both factors are normal floats for n in [-151, 129],
  // so a result in the subnormals is rounded once, and one past float's range is inf.
  std::uint32_t t_bits = 0;
  std::memcpy(&t_bits, &t, sizeof t_bits);
  const auto n_int = static_cast<std::int32_t>(t_bits - 0x4b400000u);  // bits of t - bits of shifter
  const std::int32_t n1 = n_int >> 1, n2 = n_int - n1;
  const std::uint32_t bits1 = static_cast<std::uint32_t>(n1 + 127) << 23;
  const std::uint32_t bits2 = static_cast<std::uint32_t>(n2 + 127) << 23;
  float scale1 = 0, scale2 = 0;
  std::memcpy(&scale1, &bits1, sizeof scale1);
  std::memcpy(&scale2, &bits2, sizeof scale2);
  float e = p * scale1 * scale2;
  // Outside [-104, 89] (-inf and inf too) n is garbage: there e^x is 0 or inf. Masks, not
  // selects: GCC sank the arithmetic into a branch around the constant and stopped vectorising.
  std::uint32_t bits = 0;
  std::memcpy(&bits, &e, sizeof bits);
  const std::uint32_t under = 0u - std::uint32_t(x < -104.0f), over = 0u - std::uint32_t(x > 89.0f);
  bits = (bits & ~(under | over)) | (0x7f800000u & over);
  std::memcpy(&e, &bits, sizeof e);
  return e;
#endif
}

}  // namespace hpf::math

#endif  // HPF_TENSOR_VECTOR_MATH_HPP
