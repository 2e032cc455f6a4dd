// SPDX-License-Identifier: MIT
// What hpf's benchmark executables measure and print alike: wall time, peak memory of the process
// and of the training alone, the OpenBLAS in use, and whole-number options.
#ifndef HPF_BENCHMARKS_COMMON_MEASURE_HPP
#define HPF_BENCHMARKS_COMMON_MEASURE_HPP

#include <hpf/config.hpp>
#include <hpf/system/blas.hpp>

#if HPF_ENABLE_ONEDNN
#include <dnnl.hpp>
#endif

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <exception>
#include <fstream>
#include <optional>
#include <string>
#include <utility>

namespace hpf_bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

/// A `/proc/self/status` field in MiB (VmRSS: now, VmHWM: peak since start or last reset), or -1.
inline double status_mib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
  }
  return -1;
}

/// \brief Peak memory of the training alone: the whole process's peak so far is kept, then the
/// kernel's high-water mark is reset to the current RSS (clear_refs 5), so VmHWM afterwards is the
/// peak of what follows (the data set included, the loading transients not).
struct MemoryMarks {
  double peak_before = peak_rss_mib(), base = status_mib("VmRSS");
  bool reset = static_cast<bool>(std::ofstream("/proc/self/clear_refs") << "5");
  double train_peak() const { return reset ? status_mib("VmHWM") : peak_rss_mib(); }
  double process_peak() const { return std::max(peak_before, std::max(train_peak(), peak_rss_mib())); }
};

/// The OpenBLAS kernel family (`SkylakeX`, or `Haswell_(hpf_replaced_Prescott)`), spaces removed
/// (RESULT values hold no spaces).
inline std::string blas_token() {
  std::string text = hpf::system::blas_kernels();
  if (text.empty()) text = "not_OpenBLAS";
  std::replace(text.begin(), text.end(), ' ', '_');
  return text;
}

/// The instruction set oneDNN's kernels use here (`avx512_core`: its Winograd convolutions run),
/// or `none` when hpf is built without oneDNN.
inline std::string onednn_isa() {
#if HPF_ENABLE_ONEDNN
  using isa = dnnl::cpu_isa;
  const isa found = dnnl::get_effective_cpu_isa();
  for (const auto& [known, name] : {std::pair{isa::avx512_core_amx, "avx512_core_amx"}, std::pair{isa::avx512_core_bf16, "avx512_core_bf16"},
                                    std::pair{isa::avx512_core_vnni, "avx512_core_vnni"}, std::pair{isa::avx512_core, "avx512_core"},
                                    std::pair{isa::avx2_vnni, "avx2_vnni"}, std::pair{isa::avx2, "avx2"}, std::pair{isa::avx, "avx"},
                                    std::pair{isa::sse41, "sse41"}})
    if (found == known) return name;
  return "isa_" + std::to_string(static_cast<unsigned>(found));
#else
  return "none";
#endif
}

/// File name of the mapped OpenBLAS library (e.g. libopenblasp-r0.3.21.so), or "unknown".
inline std::string blas_library() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.rfind('/');
    if (slash != std::string::npos && line.find("libopenblas", slash) != std::string::npos)
      return line.substr(slash + 1);
  }
  return "unknown";
}

/// `text` as a whole number (digits only), or nothing.
inline std::optional<std::size_t> whole_number(const std::string& text) {
  if (text.empty() || text[0] == '-') return std::nullopt;
  std::size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != text.size()) return std::nullopt;
  return static_cast<std::size_t>(value);
}

}  // namespace hpf_bench

#endif  // HPF_BENCHMARKS_COMMON_MEASURE_HPP
