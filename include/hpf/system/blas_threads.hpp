// SPDX-License-Identifier: MIT
#ifndef HPF_SYSTEM_BLAS_THREADS_HPP
#define HPF_SYSTEM_BLAS_THREADS_HPP

// OpenBLAS' threads: how it runs them, and keeping its own pool out of other libraries' way.
// OpenBLAS' functions are found with dlsym (no link-time dependency: with another BLAS these do
// nothing).

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

namespace hpf::system {

namespace detail {
/// The OpenBLAS functions hpf calls, each null where the loaded BLAS lacks it (not OpenBLAS),
/// looked up once.
struct OpenBlasFunctions {
  using int_fn = int (*)();
  int_fn parallel = reinterpret_cast<int_fn>(dlsym(RTLD_DEFAULT, "openblas_get_parallel"));
  int_fn get_threads = reinterpret_cast<int_fn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  void (*set_threads)(int) = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  int_fn shutdown = reinterpret_cast<int_fn>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"));
};
inline const OpenBlasFunctions& openblas() {
  static const OpenBlasFunctions functions;
  return functions;
}
}  // namespace detail

/// How the loaded OpenBLAS runs its threads: "OpenMP" (the threads of the process's OpenMP runtime,
/// shared with Kokkos' OpenMP backend), "pthreads" (a pool of its own), "sequential", or "" when the
/// BLAS is not OpenBLAS.
inline std::string blas_threading() {
  if (!detail::openblas().parallel) return "";
  switch (detail::openblas().parallel()) {
    case 0: return "sequential";
    case 1: return "pthreads";
    case 2: return "OpenMP";
    default: return "unknown";
  }
}

/// The threads the loaded OpenBLAS runs a call on, or -1 when the BLAS is not OpenBLAS.
inline int blas_threads() { return detail::openblas().get_threads ? detail::openblas().get_threads() : -1; }

/// Whether the loaded BLAS runs a pool of threads of its own (OpenBLAS' pthreads build), asked once.
inline bool blas_has_own_pool() {
  static const bool own = blas_threading() == "pthreads";
  return own;
}

/// \brief Stops the loaded OpenBLAS' pool of threads, where it runs one of its own (its pthreads
/// build), until a call wants it again (OpenBLAS then starts it anew). Returns false where the
/// loaded BLAS keeps no pool of its own (not OpenBLAS, or its OpenMP or sequential build).
///
/// OpenBLAS starts its pool when it loads, and an idle thread of it spins in sched_yield for
/// about 2^28 cycles (OpenBLAS' THREAD_TIMEOUT, a tenth of a second) before it sleeps: a short
/// program that computes without BLAS, as `hpf-oracle rank` does, loses a core to it for its
/// whole run. OPENBLAS_NUM_THREADS=1 starts no pool; openblas_set_num_threads(1) leaves it spinning.
inline bool stop_blas_threads() {
  const auto shutdown = detail::openblas().shutdown;
  return blas_has_own_pool() && shutdown && shutdown() == 0;
}

namespace detail {
/// Whether OpenBLAS may have run a call on its pool since yield_blas_pool last stopped it (it
/// starts the pool when it loads).
inline std::atomic<bool>& blas_pool_may_spin() {
  static std::atomic<bool> may_spin{true};
  return may_spin;
}
}  // namespace detail

/// Tells yield_blas_pool that a BLAS call is made that OpenBLAS may run on its pool (it decides by
/// the call's size): hpf's GEMMs call this.
inline void note_blas_call() { detail::blas_pool_may_spin().store(true, std::memory_order_relaxed); }

/// \brief Before another library's kernels run on OpenMP threads (oneDNN's, from the network's
/// thread): stops OpenBLAS' own pool (stop_blas_threads) if the calling thread would open a
/// parallel region of more than one thread and a BLAS call was made since the pool last stopped
/// (note_blas_call). Two pools then never compete for the cores: after each threaded call
/// OpenBLAS' idle threads spin for a tenth of a second on the cores the OpenMP threads want.
/// OpenBLAS starts its pool again at its next threaded call. Nothing inside a parallel region
/// (thread groups, weight-gradient lanes), where other threads may be inside OpenBLAS, nor where
/// OpenBLAS shares OpenMP's threads (its OpenMP build, linked with Kokkos OpenMP). The functions
/// are looked up once: a network calls this before every oneDNN kernel.
inline void yield_blas_pool() {
  using int_fn = int (*)();
  static const int_fn max_threads = reinterpret_cast<int_fn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  static const int_fn in_parallel = reinterpret_cast<int_fn>(dlsym(RTLD_DEFAULT, "omp_in_parallel"));
  if (blas_has_own_pool() && max_threads && in_parallel && max_threads() > 1 && !in_parallel() &&
      detail::blas_pool_may_spin().exchange(false, std::memory_order_relaxed))
    stop_blas_threads();
}

/// \brief Runs OpenBLAS' pthreads build on one thread while it lives: for products too small to
/// share, whose threaded calls would wake OpenBLAS' pool between oneDNN's kernels. Such calls need
/// no note_blas_call. Guards on several threads, or nested, restore the count once, when the last
/// one ends. Nothing with OpenBLAS' OpenMP build (its thread count is OpenMP's) or another BLAS.
/// (OpenBLAS 0.3.21 starts a stopped pool again when its thread count is set: once, then its
/// threads sleep, as nothing calls on them.)
class BlasOnOneThread {
 public:
  BlasOnOneThread() {
    if (!active()) return;
    const std::lock_guard<std::mutex> lock(state().mutex);
    if (state().depth++ == 0 && (state().saved = blas_threads()) > 1) detail::openblas().set_threads(1);
  }
  ~BlasOnOneThread() {
    if (!active()) return;
    const std::lock_guard<std::mutex> lock(state().mutex);
    if (--state().depth == 0 && state().saved > 1) detail::openblas().set_threads(state().saved);
  }
  BlasOnOneThread(const BlasOnOneThread&) = delete;
  BlasOnOneThread& operator=(const BlasOnOneThread&) = delete;

 private:
  struct State {
    std::mutex mutex;
    int depth = 0;  // guards alive
    int saved = 1;  // OpenBLAS' threads before the first of them
  };
  static State& state() {
    static State s;
    return s;
  }
  static bool active() { return blas_has_own_pool() && detail::openblas().get_threads && detail::openblas().set_threads; }
};

}  // namespace hpf::system

#endif  // HPF_SYSTEM_BLAS_THREADS_HPP
