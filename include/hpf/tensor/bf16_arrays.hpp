// SPDX-License-Identifier: MIT
#ifndef HPF_TENSOR_BF16_ARRAYS_HPP
#define HPF_TENSOR_BF16_ARRAYS_HPP

#include <hpf/tensor/bf16.hpp>
#include <hpf/tensor/blocks.hpp>

#include <cstddef>

namespace hpf {

/// out[i] = to_bf16(in[i]) for i < n, on `space` (the bytes a bf16 message carries).
template <class Space>
void encode_bf16(const Space& space, const float* in, bf16_bits* out, std::size_t n) {
  detail::for_each_block(space, n, "hpf::encode_bf16", KOKKOS_LAMBDA(const std::size_t begin, const std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) out[i] = to_bf16(in[i]);
  });
}

/// out[i] = from_bf16(in[i]) for i < n, on `space` (exact).
template <class Space>
void decode_bf16(const Space& space, const bf16_bits* in, float* out, std::size_t n) {
  detail::for_each_block(space, n, "hpf::decode_bf16", KOKKOS_LAMBDA(const std::size_t begin, const std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) out[i] = from_bf16(in[i]);
  });
}

/// data[i] = round_to_bf16(data[i]) for i < n, on `space`: the values a bf16 message would bring.
template <class Space>
void round_to_bf16_in_place(const Space& space, float* data, std::size_t n) {
  detail::for_each_block(space, n, "hpf::round_to_bf16", KOKKOS_LAMBDA(const std::size_t begin, const std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) data[i] = round_to_bf16(data[i]);
  });
}

}  // namespace hpf

#endif  // HPF_TENSOR_BF16_ARRAYS_HPP
