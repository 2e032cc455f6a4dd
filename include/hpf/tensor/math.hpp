// SPDX-License-Identifier: MIT
#ifndef HPF_TENSOR_MATH_HPP
#define HPF_TENSOR_MATH_HPP

#include <Kokkos_Core.hpp>

namespace hpf::math {

// Device-callable math across Kokkos versions: Kokkos 3.4 has these only in
// Kokkos::Experimental, Kokkos >= 3.7 in Kokkos (the Experimental names are gone in 4.x).
#if KOKKOS_VERSION >= 30700
using Kokkos::erf;
using Kokkos::exp;
using Kokkos::log;
using Kokkos::log1p;
using Kokkos::sqrt;
using Kokkos::tanh;
#else
using Kokkos::Experimental::erf;
using Kokkos::Experimental::exp;
using Kokkos::Experimental::log;
using Kokkos::Experimental::log1p;
using Kokkos::Experimental::sqrt;
using Kokkos::Experimental::tanh;
#endif

}  // namespace hpf::math

#endif  // HPF_TENSOR_MATH_HPP
