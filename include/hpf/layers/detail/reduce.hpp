// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_REDUCE_HPP
#define HPF_LAYERS_DETAIL_REDUCE_HPP

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf::detail {

inline constexpr std::size_t sum_lanes = 16;

/// acc[0] + acc[1] + ... added pairwise (lanes 0..7 with 8..15, and so on); the result in acc[0].
template <class Acc>
KOKKOS_INLINE_FUNCTION Acc fold_lanes(Acc (&acc)[sum_lanes]) {
  for (std::size_t width = sum_lanes / 2; width > 0; width /= 2) {
    for (std::size_t k = 0; k < width; ++k) acc[k] += acc[k + width];
  }
  return acc[0];
}

/// \brief sum_{i < n} f(i), accumulated in Acc over 16 interleaved lanes then added pairwise.
/// One accumulator would chain every addition on the previous one (compilers may not reorder
/// floating-point sums); 16 independent lanes vectorise, and the order is still fixed, so the
/// result is the same on every run.
template <class Acc, class F>
KOKKOS_INLINE_FUNCTION Acc lane_sum(std::size_t n, const F& f) {
  Acc acc[sum_lanes] = {};
  std::size_t i = 0;
  for (; i + sum_lanes <= n; i += sum_lanes) {
    for (std::size_t k = 0; k < sum_lanes; ++k) acc[k] += static_cast<Acc>(f(i + k));
  }
  for (std::size_t k = 0; i + k < n; ++k) acc[k] += static_cast<Acc>(f(i + k));
  return fold_lanes(acc);
}

/// Two sums over the same range.
template <class Acc>
struct SumPair {
  Acc first, second;
};

/// {lane_sum(n, f), lane_sum(n, g)}, the same bits, in one pass: values both terms read (an
/// output gradient) come from memory once.
template <class Acc, class F, class G>
KOKKOS_INLINE_FUNCTION SumPair<Acc> lane_sums(std::size_t n, const F& f, const G& g) {
  Acc a[sum_lanes] = {}, b[sum_lanes] = {};
  std::size_t i = 0;
  for (; i + sum_lanes <= n; i += sum_lanes) {
    for (std::size_t k = 0; k < sum_lanes; ++k) {
      a[k] += static_cast<Acc>(f(i + k));
      b[k] += static_cast<Acc>(g(i + k));
    }
  }
  for (std::size_t k = 0; i + k < n; ++k) {
    a[k] += static_cast<Acc>(f(i + k));
    b[k] += static_cast<Acc>(g(i + k));
  }
  return {fold_lanes(a), fold_lanes(b)};
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

/// {team_sum(team, n, f), team_sum(team, n, g)}: in one pass on single-thread teams.
template <class Acc, class Member, class F, class G>
KOKKOS_INLINE_FUNCTION SumPair<Acc> team_sums(const Member& team, std::size_t n, const F& f, const G& g) {
  if (team.team_size() == 1) return lane_sums<Acc>(n, f, g);
  return {team_sum<Acc>(team, n, f), team_sum<Acc>(team, n, g)};
}

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_REDUCE_HPP
