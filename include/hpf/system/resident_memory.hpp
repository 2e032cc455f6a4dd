// SPDX-License-Identifier: MIT
#ifndef HPF_SYSTEM_RESIDENT_MEMORY_HPP
#define HPF_SYSTEM_RESIDENT_MEMORY_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace hpf::system {

/// \brief This process's resident set now (Linux: VmRSS of /proc/self/status), in bytes; 0 where
/// the system does not say. Less the data and the engine's written pages after a training step, it
/// is what the oracle adds to the engine's memory to predict a rank's peak resident set
/// (hpf::oracle::Plan::process_bytes).
inline std::size_t resident_set_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return static_cast<std::size_t>(std::stoull(line.substr(6))) * 1024;  // kB
  }
  return 0;
}

/// \brief Of the `bytes` at `address`, those in pages resident now (Linux: mincore), at most
/// `bytes`; all of them where the system does not say. A buffer's pages enter the resident set
/// when first written: a vendor's scratch sized for its largest need, of which a kernel writes
/// less, holds fewer resident bytes than it allocated.
inline std::size_t resident_bytes(const void* address, std::size_t bytes) {
#if defined(__linux__)
  if (bytes == 0) return 0;
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(address) / page * page;
  const auto end = (reinterpret_cast<std::uintptr_t>(address) + bytes + page - 1) / page * page;
  std::vector<unsigned char> pages((end - begin) / page);
  if (mincore(reinterpret_cast<void*>(begin), end - begin, pages.data()) != 0) return bytes;
  std::size_t resident = 0;
  for (const unsigned char p : pages) resident += p & 1;
  return std::min<std::size_t>(bytes, resident * page);
#else
  (void)address;
  return bytes;
#endif
}

}  // namespace hpf::system

#endif  // HPF_SYSTEM_RESIDENT_MEMORY_HPP
