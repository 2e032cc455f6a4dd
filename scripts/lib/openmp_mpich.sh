# shellcheck shell=bash
# hpf_openmp_mpich_configuration THREADS JOBS: builds Kokkos + KokkosKernels for OpenMP if they are
# not cached yet (scripts/kokkos/build.sh, under ~/.cache/hpf) and sets hpf_openmp_mpich_args to the
# CMake arguments of the second CPU configuration the suite runs on: that Kokkos, MPICH's compiler
# wrapper and launcher, and THREADS OpenMP threads per test process. Needs `root` (the checkout).
# Used by scripts/test_openmp_mpich.sh and scripts/test_sanitizers.sh openmp-mpich.
hpf_openmp_mpich_configuration() {
  local threads=$1 jobs=$2 kokkos
  echo "== Kokkos + KokkosKernels for OpenMP (cached after the first build)"
  "$root/scripts/kokkos/build.sh" openmp -j "$jobs"
  kokkos=$("$root/scripts/kokkos/build.sh" openmp --print-prefix)
  hpf_openmp_mpich_args=(-DKokkos_ROOT="$kokkos" -DMPI_CXX_COMPILER=mpicxx.mpich
                         -DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.mpich -DHPF_TEST_THREADS="$threads")
}
