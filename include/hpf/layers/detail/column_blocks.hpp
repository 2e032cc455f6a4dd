// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_COLUMN_BLOCKS_HPP
#define HPF_LAYERS_DETAIL_COLUMN_BLOCKS_HPP

#include <hpf/tensor/views.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf::detail {

// A channel split's member owns a block of a weight matrix's columns; its GEMMs read and write
// that block as a matrix of its own.

/// packed(r, j) = m(r, first + j).
template <class Space, class T>
void pack_columns(const Space& space, Matrix<const T, Space> m, std::size_t first, Matrix<T, Space> packed) {
  const std::size_t width = packed.extent(1);
  Kokkos::parallel_for("hpf::pack_columns", Kokkos::RangePolicy<Space>(space, 0, packed.extent(0)),
                       KOKKOS_LAMBDA(const std::size_t r) {
                         for (std::size_t j = 0; j < width; ++j) packed(r, j) = m(r, first + j);
                       });
}

/// m(r, first + j) = packed(r, j).
template <class Space, class T>
void unpack_columns(const Space& space, Matrix<const T, Space> packed, std::size_t first, Matrix<T, Space> m) {
  const std::size_t width = packed.extent(1);
  Kokkos::parallel_for("hpf::unpack_columns", Kokkos::RangePolicy<Space>(space, 0, packed.extent(0)),
                       KOKKOS_LAMBDA(const std::size_t r) {
                         for (std::size_t j = 0; j < width; ++j) m(r, first + j) = packed(r, j);
                       });
}

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_COLUMN_BLOCKS_HPP
