// Small host-side helpers for filling and reading network tensors in tests.
#ifndef HPF_TESTS_SUPPORT_FILL_HPP
#define HPF_TESTS_SUPPORT_FILL_HPP

#include <hpf/tensor/random.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <vector>

namespace hpf_test {

/// Fills a device view with U(lo, hi) values from `seed` and returns them (host copy, row-major).
template <class View>
std::vector<double> fill_uniform(const View& v, std::uint64_t seed, double lo = -1, double hi = 1) {
  auto host = Kokkos::create_mirror_view(v);
  hpf::Rng rng(seed);
  std::vector<double> values(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    values[i] = rng.uniform(lo, hi);
    host.data()[i] = static_cast<typename View::value_type>(values[i]);
  }
  Kokkos::deep_copy(v, host);
  return values;
}

/// Host copy of a (contiguous) device view as doubles.
template <class View>
std::vector<double> to_host(const View& v) {
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
  return std::vector<double>(host.data(), host.data() + host.size());
}

}  // namespace hpf_test

#endif  // HPF_TESTS_SUPPORT_FILL_HPP
