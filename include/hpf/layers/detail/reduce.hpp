// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_REDUCE_HPP
#define HPF_LAYERS_DETAIL_REDUCE_HPP

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf::detail {

/// \brief sum_{i < n} f(i), accumulated in Acc over 16 interleaved lanes then added pairwise.
/// One accumulator would chain every addition on the previous one (compilers may not reorder
/// floating-point sums); 16 independent lanes vectorise, and the order is still fixed, so the
/// result is the same on every run.
template <class Acc, class F>
KOKKOS_INLINE_FUNCTION Acc lane_sum(std::size_t n, const F& f) {
  constexpr std::size_t lanes = 16;
  Acc acc[lanes] = {};
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    for (std::size_t k = 0; k < lanes; ++k) acc[k] += static_cast<Acc>(f(i + k));
  }
  for (std::size_t k = 0; i + k < n; ++k) acc[k] += static_cast<Acc>(f(i + k));
  for (std::size_t width = lanes / 2; width > 0; width /= 2) {
    for (std::size_t k = 0; k < width; ++k) acc[k] += acc[k + width];
  }
  return acc[0];
}

/// \brief Sum over [0, n) of f(i) by one team: lane_sum when the team is a single thread (CPU
/// backends), a team reduction otherwise (GPUs).
template <class Acc, class Member, class F>
KOKKOS_INLINE_FUNCTION Acc team_sum(const Member& team, std::size_t n, const F& f) {
  if (team.team_size() == 1) return lane_sum<Acc>(n, f);
  Acc total = 0;
  Kokkos::parallel_reduce(Kokkos::TeamThreadRange(team, n), [&](const std::size_t i, Acc& acc) { acc += static_cast<Acc>(f(i)); }, total);
  return total;
}

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_REDUCE_HPP
