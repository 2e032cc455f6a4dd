// SPDX-License-Identifier: MIT
#ifndef HPF_SYSTEM_RUNTIME_HPP
#define HPF_SYSTEM_RUNTIME_HPP

#include <hpf/system/blas.hpp>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hpf::system {

/// \brief Process-wide settings, decided once at start-up (hpf::comm::Environment applies them)
/// instead of read by whichever component first needs them.
struct RuntimeOptions {
  /// Re-execute the program once so that OpenBLAS runs the widest kernels this CPU supports
  /// (select_blas_kernels). Off when OPENBLAS_CORETYPE already chooses them.
  bool widest_blas_kernels = true;
  /// Threads of the libraries hpf calls outside Kokkos kernels (OpenBLAS, oneDNN through
  /// OpenMP); 0: as many as the Kokkos host execution space has (match_library_threads).
  int library_threads = 0;
  /// Ask MPI for MPI_THREAD_MULTIPLE instead of MPI_THREAD_FUNNELED, so that a progress thread
  /// (StepOptions::exchange_progress) may call MPI beside the thread that trains.
  bool mpi_thread_multiple = false;

  /// The defaults, adjusted by the environment: HPF_KEEP_BLAS_KERNELS=1 keeps OpenBLAS' own
  /// kernel choice; HPF_MPI_THREADS=multiple asks for MPI_THREAD_MULTIPLE.
  static RuntimeOptions from_environment() {
    RuntimeOptions o;
    if (const char* keep = std::getenv("HPF_KEEP_BLAS_KERNELS"); keep && *keep && *keep != '0') o.widest_blas_kernels = false;
    if (const char* threads = std::getenv("HPF_MPI_THREADS"); threads && *threads) {
      const std::string_view level(threads);
      if (level != "multiple" && level != "funneled") {
        throw std::invalid_argument("hpf: HPF_MPI_THREADS must be 'funneled' or 'multiple', not '" + std::string(level) + "'");
      }
      o.mpi_thread_multiple = level == "multiple";
    }
    return o;
  }
};

/// What must happen before MPI and Kokkos start (may re-execute the program).
inline void configure_before_start(const RuntimeOptions& options, char** argv) {
  if (options.widest_blas_kernels) select_blas_kernels(argv);
}

/// What must happen once Kokkos has started, given its host execution space's threads.
inline void configure_after_start(const RuntimeOptions& options, int host_threads) {
  match_library_threads(options.library_threads > 0 ? options.library_threads : host_threads);
}

}  // namespace hpf::system

#endif  // HPF_SYSTEM_RUNTIME_HPP
