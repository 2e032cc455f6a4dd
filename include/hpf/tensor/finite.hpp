// SPDX-License-Identifier: MIT
#ifndef HPF_TENSOR_FINITE_HPP
#define HPF_TENSOR_FINITE_HPP

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf {

/// Number of NaN and infinite values among the `size` contiguous elements at `data` (memory of
/// Space), in one pass. `v - v` is 0 exactly for finite v, on every backend and Kokkos version.
template <class T, class Space>
std::size_t count_non_finite(const T* data, std::size_t size, Space space = Space{}) {
  std::size_t bad = 0;
  Kokkos::parallel_reduce(
      "hpf::count_non_finite", Kokkos::RangePolicy<Space>(space, 0, size),
      KOKKOS_LAMBDA(const std::size_t i, std::size_t& sum) { sum += (data[i] - data[i] == T(0)) ? 0 : 1; }, bad);
  return bad;
}

/// count_non_finite over a whole contiguous view.
template <class View>
std::size_t count_non_finite(const View& v) {
  return count_non_finite<typename View::non_const_value_type, typename View::execution_space>(v.data(), v.size());
}

}  // namespace hpf

#endif  // HPF_TENSOR_FINITE_HPP
