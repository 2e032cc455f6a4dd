// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_ROWS_HPP
#define HPF_LAYERS_DETAIL_ROWS_HPP

#include <hpf/layers/detail/reduce.hpp>
#include <hpf/tensor/views.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf::detail {

// Bias kernels of Dense and Conv2D. Kernels live in free functions or public members: CUDA
// forbids device lambdas in private member functions.

/// out(r, j) = values(r) for every column j.
template <class Space, class T>
void broadcast_rows(const Space& space, Vector<T, Space> values, Matrix<T, Space> out, const char* label) {
  const std::size_t cols = out.extent(1);
  Kokkos::parallel_for(label, Kokkos::RangePolicy<Space>(space, 0, out.extent(0)), KOKKOS_LAMBDA(const std::size_t r) {
    for (std::size_t j = 0; j < cols; ++j) out(r, j) = values(r);
  });
}

/// sums(r) += the sum of row r of m (bias gradients).
template <class Space, class T>
void add_row_sums(const Space& space, Matrix<const T, Space> m, Vector<T, Space> sums, const char* label) {
  const std::size_t cols = m.extent(1);
  Kokkos::parallel_for(label, Kokkos::RangePolicy<Space>(space, 0, m.extent(0)), KOKKOS_LAMBDA(const std::size_t r) {
    const T* row = &m(r, 0);
    sums(r) += lane_sum<T>(cols, [&](std::size_t j) { return row[j]; });
  });
}

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_ROWS_HPP
