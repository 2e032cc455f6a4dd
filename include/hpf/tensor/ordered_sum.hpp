// SPDX-License-Identifier: MIT
#ifndef HPF_TENSOR_ORDERED_SUM_HPP
#define HPF_TENSOR_ORDERED_SUM_HPP

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf {

/// Most parts ordered_sum combines (the replicas of one stage under ordered gradient reduction).
inline constexpr std::size_t ordered_sum_max_parts = 64;

/// \brief out[i] = the sum over p of parts[p * stride + i], always in the same pairwise tree:
/// neighbours first, ((x0 + x1) + (x2 + x3)) + ..., an odd last part carried up unchanged.
/// Floating-point addition is not associative; a fixed tree makes the result depend only on the
/// parts, so R replicas and one process that holds the R partial sums agree to the last bit.
template <class Space, class T>
void ordered_sum(const Space& space, const T* parts, std::size_t count, std::size_t stride, T* out, std::size_t n) {
  KOKKOS_ASSERT(count >= 1 && count <= ordered_sum_max_parts);
  Kokkos::parallel_for(
      "hpf::ordered_sum", Kokkos::RangePolicy<Space>(space, 0, n), KOKKOS_LAMBDA(const std::size_t i) {
        T v[ordered_sum_max_parts];
        for (std::size_t p = 0; p < count; ++p) v[p] = parts[p * stride + i];
        for (std::size_t live = count; live > 1; live = (live + 1) / 2) {
          for (std::size_t j = 0; j < live / 2; ++j) v[j] = v[2 * j] + v[2 * j + 1];
          if (live % 2) v[live / 2] = v[live - 1];
        }
        out[i] = v[0];
      });
}

}  // namespace hpf

#endif  // HPF_TENSOR_ORDERED_SUM_HPP
