// SPDX-License-Identifier: MIT
#ifndef HPF_TENSOR_ORDERED_SUM_HPP
#define HPF_TENSOR_ORDERED_SUM_HPP

#include <hpf/tensor/bf16.hpp>
#include <hpf/tensor/blocks.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <type_traits>

namespace hpf {

/// Most parts ordered_sum combines (the replicas of one stage under ordered gradient reduction).
inline constexpr std::size_t ordered_sum_max_parts = 64;

/// \brief out[i] = the sum over p of parts[p * stride + i], always in the same pairwise tree:
/// neighbours first, ((x0 + x1) + (x2 + x3)) + ..., an odd last part carried up unchanged.
/// Floating-point addition is not associative; a fixed tree makes the result depend only on the
/// parts, so R replicas and one process that holds the R partial sums agree to the last bit.
///
/// The tree's node at level L covers parts [j 2^L, min((j + 1) 2^L, count)), so it is built like a
/// binary counter: push each part, and after part p merge the top two entries once per trailing
/// zero bit of p + 1; what is left (one entry per set bit of count, largest first) is merged from
/// the top down. On the host a lane of `lanes` elements moves through each step together, so the
/// adds vectorise (one element per iteration left a scalar loop that took 1.3 ms for the MLP's
/// 670 K gradient values on 2 replicas).
///
/// Parts may be bfloat16 (`Part` = bf16_bits, as a bf16 gradient exchange receives them): each is
/// read as the float it holds, exactly, and the tree adds in T.
template <class Space, class Part, class T>
void ordered_sum(const Space& space, const Part* parts, std::size_t count, std::size_t stride, T* out, std::size_t n) {
  static_assert(std::is_same_v<Part, T> || (std::is_same_v<Part, bf16_bits> && std::is_same_v<T, float>),
                "hpf::ordered_sum: parts are T, or bfloat16 added in float");
  KOKKOS_ASSERT(count >= 1 && count <= ordered_sum_max_parts);
  constexpr std::size_t lanes = detail::elements_per_block<Space>() > 1 ? 64 : 1;
  constexpr std::size_t depth = 7;  // entries alive at once: one per bit of count <= 64, plus one
  detail::for_each_block(space, n, "hpf::ordered_sum", KOKKOS_LAMBDA(const std::size_t begin, const std::size_t end) {
    const Part* const in = parts;  // local copies: the stores below cannot change them
    T* const to = out;
    const std::size_t parts_count = count, part_stride = stride;
    T stack[depth][lanes];
    for (std::size_t chunk = begin; chunk < end; chunk += lanes) {
      const std::size_t width = end - chunk < lanes ? end - chunk : lanes;
      std::size_t top = 0;
      const auto merge_top = [&]() {  // the top two entries become their sum, the earlier parts on the left
        for (std::size_t k = 0; k < width; ++k) stack[top - 2][k] = stack[top - 2][k] + stack[top - 1][k];
        --top;
      };
      for (std::size_t p = 0; p < parts_count; ++p) {
        const Part* part = in + p * part_stride + chunk;
        if constexpr (std::is_same_v<Part, T>) {
          for (std::size_t k = 0; k < width; ++k) stack[top][k] = part[k];
        } else {
          for (std::size_t k = 0; k < width; ++k) stack[top][k] = from_bf16(part[k]);
        }
        ++top;
        for (std::size_t done = p + 1; done % 2 == 0; done /= 2) merge_top();
      }
      while (top > 1) merge_top();
      for (std::size_t k = 0; k < width; ++k) to[chunk + k] = stack[0][k];
    }
  });
}

}  // namespace hpf

#endif  // HPF_TENSOR_ORDERED_SUM_HPP
