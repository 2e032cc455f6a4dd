// SPDX-License-Identifier: MIT
#ifndef HPF_TENSOR_BF16_HPP
#define HPF_TENSOR_BF16_HPP

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

namespace hpf {

/// \brief bfloat16 as its 16 bits: float's sign, 8 exponent bits and the top 7 mantissa bits.
/// What a bf16 tensor holds in memory (oneDNN's and cuBLAS's bf16 operands).
using bf16_bits = std::uint16_t;

/// `value` rounded to the nearest bfloat16, ties to even (as PyTorch's and oneDNN's conversions);
/// NaNs stay NaNs (quiet), infinities and overflow give infinity.
KOKKOS_INLINE_FUNCTION bf16_bits to_bf16(float value) {
  std::uint32_t u = 0;
  std::memcpy(&u, &value, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<bf16_bits>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<bf16_bits>(u >> 16);
}

/// The float a bfloat16 holds (exact).
KOKKOS_INLINE_FUNCTION float from_bf16(bf16_bits bits) {
  const std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
  float value = 0;
  std::memcpy(&value, &u, sizeof value);
  return value;
}

/// `value` rounded to bfloat16 and back: the float a bf16 operand of a product contributes.
KOKKOS_INLINE_FUNCTION float round_to_bf16(float value) { return from_bf16(to_bf16(value)); }

}  // namespace hpf

#endif  // HPF_TENSOR_BF16_HPP
