// SPDX-License-Identifier: MIT
#ifndef HPF_SYSTEM_BLAS_HPP
#define HPF_SYSTEM_BLAS_HPP

#include <hpf/system/blas_threads.hpp>
#include <hpf/system/reexecute.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace hpf::system {

namespace detail {
/// OpenBLAS's own functions, if OpenBLAS is the BLAS this process loaded (dlsym: no link-time
/// dependency, so any other BLAS simply skips these adjustments).
inline const char* openblas_core() {
  using corename_fn = char* (*)();
  auto f = reinterpret_cast<corename_fn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  return f ? f() : nullptr;
}
/// How wide the SIMD of OpenBLAS kernel family `core` is: 0 unknown, 1 SSE, 2 AVX/AVX2, 3 AVX-512.
inline int core_width(std::string_view core) {
  for (std::string_view wide : {"skylakex", "cooperlake", "sapphirerapids"})
    if (core == wide) return 3;
  for (std::string_view avx : {"sandybridge", "haswell", "zen", "excavator", "steamroller", "piledriver", "bulldozer"})
    if (core == avx) return 2;
  for (std::string_view sse : {"prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "barcelona", "opteron", "katmai"})
    if (core == sse) return 1;
  return 0;
}
inline std::string lower(const char* s) {
  std::string r(s ? s : "");
  for (char& c : r) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return r;
}
}  // namespace detail

/// The OpenBLAS kernel family this CPU runs best: SkylakeX with AVX-512, Haswell with AVX2+FMA.
inline const char* best_openblas_core() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return nullptr;
}

/// \brief Makes OpenBLAS use the widest kernels this CPU supports.
///
/// OpenBLAS picks its kernels once, when it loads, from the CPU model it recognises; a CPU newer
/// than the OpenBLAS release gets old SSE kernels (OpenBLAS 0.3.21 on Zen 5: "Prescott", about a
/// quarter of the AVX-512 speed). Unless OPENBLAS_CORETYPE is set (then the user has chosen and
/// nothing happens), this re-executes the program once with OPENBLAS_CORETYPE set to
/// best_openblas_core(). Call it first thing in main, before MPI_Init; hpf::comm::Environment does
/// unless its RuntimeOptions say otherwise (HPF_KEEP_BLAS_KERNELS=1).
inline void select_blas_kernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("HPF_BLAS_REEXECUTED")) {
    return;
  }
  const char* loaded = detail::openblas_core();
  const char* best = best_openblas_core();
  if (!loaded || !best) return;
  if (detail::core_width(detail::lower(loaded)) >= detail::core_width(detail::lower(best))) return;
  setenv("OPENBLAS_CORETYPE", best, 1);
  setenv("HPF_BLAS_REEXECUTED", loaded, 1);  // once only, and tells what was replaced
  reexecute(argv);
  // exec failed: carry on with the kernels OpenBLAS chose.
  unsetenv("OPENBLAS_CORETYPE");
}

/// \brief Gives the libraries hpf calls outside Kokkos kernels (OpenBLAS; oneDNN through OpenMP)
/// as many threads as the process's host execution space has: 1 with Kokkos Serial, T with Kokkos
/// OpenMP on T threads. Those cores are free while such a call runs; larger pools would compete
/// with the other ranks of the node (OpenBLAS' pthreads spin in sched_yield). The variable each
/// library follows, when set, wins: OPENBLAS_NUM_THREADS for OpenBLAS' pthreads build,
/// OMP_NUM_THREADS for OpenMP's (oneDNN, and OpenBLAS' OpenMP build, which runs on OpenMP's count
/// and whose openblas_set_num_threads sets that count).
inline void match_library_threads(int host_threads) {
  const int threads = host_threads > 0 ? host_threads : 1;
  const char* blas_variable = blas_threading() == "OpenMP" ? "OMP_NUM_THREADS" : "OPENBLAS_NUM_THREADS";
  if (!std::getenv(blas_variable) && detail::openblas().set_threads) detail::openblas().set_threads(threads);
  if (!std::getenv("OMP_NUM_THREADS")) {
    using set_threads_fn = void (*)(int);
    if (auto f = reinterpret_cast<set_threads_fn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"))) f(threads);
  }
}

/// The OpenBLAS kernel family in use ("Haswell", "SkylakeX (hpf replaced Prescott)"), or "" when
/// the BLAS is not OpenBLAS.
inline std::string blas_kernels() {
  const char* core = detail::openblas_core();
  if (!core) return "";
  std::string text = core;
  if (const char* replaced = std::getenv("HPF_BLAS_REEXECUTED")) text += std::string(" (hpf replaced ") + replaced + ")";
  return text;
}

/// One line describing the BLAS in use, for logs ("OpenBLAS kernels: Haswell, OpenMP threads").
inline std::string blas_description() {
  const std::string kernels = blas_kernels();
  if (kernels.empty()) return "BLAS: not OpenBLAS";
  return "OpenBLAS kernels: " + kernels + ", " + blas_threading() + " threads";
}

}  // namespace hpf::system

#endif  // HPF_SYSTEM_BLAS_HPP
