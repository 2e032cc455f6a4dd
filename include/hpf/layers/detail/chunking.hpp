// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_CHUNKING_HPP
#define HPF_LAYERS_DETAIL_CHUNKING_HPP

#include <hpf/tensor/views.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf::detail {

/// Largest scratch (in elements) a layer splits its batch for: on the host, im2col columns that
/// stay in the core's L2 cache while the GEMM reads them; on a device, enough for the whole batch
/// of typical layers so each GEMM is large.
template <class Space>
constexpr std::size_t scratch_budget_elements() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space_t<Space>>::accessible
             ? (std::size_t{1} << 19)   // 2 MiB of float
             : (std::size_t{1} << 26);  // 256 MiB of float
}

/// Samples per chunk so that `per_sample` scratch elements times the chunk fits the budget
/// (at least one sample).
template <class Space>
constexpr std::size_t samples_per_chunk(std::size_t per_sample, std::size_t capacity) {
  const std::size_t fit = per_sample ? scratch_budget_elements<Space>() / per_sample : capacity;
  const std::size_t chunk = fit > 0 ? fit : 1;
  return chunk < capacity ? chunk : (capacity > 0 ? capacity : 1);
}

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_CHUNKING_HPP
