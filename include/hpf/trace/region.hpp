// SPDX-License-Identifier: MIT
#ifndef HPF_TRACE_REGION_HPP
#define HPF_TRACE_REGION_HPP

#include <Kokkos_Core.hpp>

namespace hpf::trace {

/// \brief RAII span around one kernel sequence or message ("hpf::Conv2D::forward",
/// "hpf::comm::send"). Forwards to Kokkos' profiling regions, so any Kokkos tool (space-time
/// stack, Caliper, nsys through kp_nvtx) sees hpf's structure; costs one branch when no tool is
/// loaded. This is the single place where hpf's own per-rank timeline will hook in.
class Region {
 public:
  explicit Region(const char* name) noexcept : active_(Kokkos::Profiling::profileLibraryLoaded()) {
    if (active_) Kokkos::Profiling::pushRegion(name);
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  ~Region() {
    if (active_) Kokkos::Profiling::popRegion();
  }

 private:
  bool active_;
};

}  // namespace hpf::trace

#endif  // HPF_TRACE_REGION_HPP
