// SPDX-License-Identifier: MIT
#ifndef HPF_SYSTEM_RESIDENT_MEMORY_HPP
#define HPF_SYSTEM_RESIDENT_MEMORY_HPP

#include <cstddef>
#include <fstream>
#include <string>

namespace hpf::system {

/// \brief This process's resident set now (Linux: VmRSS of /proc/self/status), in bytes; 0 where
/// the system does not say. What the oracle adds to the engine's memory to predict a rank's peak
/// resident set (hpf::oracle::Plan::process_bytes): taken once MPI and Kokkos are up, before the
/// data set is loaded.
inline std::size_t resident_set_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return static_cast<std::size_t>(std::stoull(line.substr(6))) * 1024;  // kB
  }
  return 0;
}

}  // namespace hpf::system

#endif  // HPF_SYSTEM_RESIDENT_MEMORY_HPP
