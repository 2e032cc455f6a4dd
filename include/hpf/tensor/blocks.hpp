// SPDX-License-Identifier: MIT
#ifndef HPF_TENSOR_BLOCKS_HPP
#define HPF_TENSOR_BLOCKS_HPP

#include <hpf/tensor/views.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf::detail {

/// Elements per parallel iteration of an element-wise kernel. On the host, a block that one core
/// streams through in a loop the compiler vectorises: with one iteration per element, GCC's
/// OpenMP outlining left a scalar loop that branched per element (ReLU backward on Kokkos OpenMP
/// ran 15x slower than on Serial; SGD's update 6x). 4096 floats are 16 KiB: enough blocks to
/// balance the threads of a layer of 16 K elements and more, few enough that scheduling costs
/// nothing. On a device, one element per thread.
template <class Space>
constexpr std::size_t elements_per_block() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space_t<Space>>::accessible ? 4096 : 1;
}

/// Calls body(begin, end) for consecutive blocks [begin, end) covering [0, n), in parallel on
/// `space`. body loops over its block itself, so its loop is what gets vectorised.
template <class Space, class Body>
void for_each_block(const Space& space, std::size_t n, const char* label, const Body& body) {
  constexpr std::size_t block = elements_per_block<Space>();
  const std::size_t blocks = (n + block - 1) / block;
  Kokkos::parallel_for(label, Kokkos::RangePolicy<Space>(space, 0, blocks), KOKKOS_LAMBDA(const std::size_t b) {
    const std::size_t begin = b * block;
    body(begin, begin + block < n ? begin + block : n);
  });
}

}  // namespace hpf::detail

#endif  // HPF_TENSOR_BLOCKS_HPP
