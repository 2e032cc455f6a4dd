// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_ELEMENTWISE_HPP
#define HPF_LAYERS_DETAIL_ELEMENTWISE_HPP

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf::detail {

/// out = a + b over contiguous views of equal size (out may alias a or b).
template <class Space, class A, class B, class Out>
void add(const Space& space, const A& a, const B& b, const Out& out, const char* label) {
  const auto* pa = a.data();
  const auto* pb = b.data();
  auto* po = out.data();
  Kokkos::parallel_for(label, Kokkos::RangePolicy<Space>(space, 0, out.size()),
                       KOKKOS_LAMBDA(const std::size_t i) { po[i] = pa[i] + pb[i]; });
}

/// into += from over contiguous views of equal size.
template <class Space, class From, class Into>
void accumulate(const Space& space, const From& from, const Into& into, const char* label) {
  const auto* pf = from.data();
  auto* pi = into.data();
  Kokkos::parallel_for(label, Kokkos::RangePolicy<Space>(space, 0, into.size()),
                       KOKKOS_LAMBDA(const std::size_t i) { pi[i] += pf[i]; });
}

/// values *= factor over a contiguous view.
template <class Space, class View>
void scale(const Space& space, const View& values, typename View::non_const_value_type factor, const char* label) {
  auto* p = values.data();
  Kokkos::parallel_for(label, Kokkos::RangePolicy<Space>(space, 0, values.size()),
                       KOKKOS_LAMBDA(const std::size_t i) { p[i] *= factor; });
}

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_ELEMENTWISE_HPP
