#!/usr/bin/env bash
# The unit and MPI test suite a second time, on the other CPU backend and the other MPI: Kokkos
# OpenMP (built from Debian's source package by scripts/kokkos/build.sh, cached under
# ~/.cache/hpf) with HPF_TEST_THREADS OpenMP threads per rank (default 2), and MPICH, optimised as
# users build it (the test programs too, at -O3: the first pass builds them at -O1,
# HPF_TEST_OPTIMIZATION). Installs the Debian packages `scripts/quickstart.sh test` installs. CI runs this
# configuration built with the sanitizers instead (scripts/test_sanitizers.sh openmp-mpich), which
# runs the same tests: one build of the suite fewer.
# Options (environment): HPF_BUILD_DIR (default build-openmp-mpich), HPF_JOBS, HPF_TEST_THREADS,
# HPF_CMAKE_ARGS.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${HPF_BUILD_DIR:-$root/build-openmp-mpich}
jobs=${HPF_JOBS:-$(nproc)}
threads=${HPF_TEST_THREADS:-2}
# shellcheck source=lib/debian.sh
source "$root/scripts/lib/debian.sh"
# shellcheck source=lib/ctest.sh
source "$root/scripts/lib/ctest.sh"
# shellcheck source=lib/ccache.sh
source "$root/scripts/lib/ccache.sh"
# shellcheck source=lib/openmp_mpich.sh
source "$root/scripts/lib/openmp_mpich.sh"
hpf_install_packages "${HPF_PACKAGES_TEST[@]}"
hpf_openmp_mpich_configuration "$threads" "$jobs"

echo "== configuring and building hpf in $build (Kokkos OpenMP, MPICH, $threads threads per rank)"
# The compile-fail, compile-budget and consumer tests and the header self-containment builds check
# compile errors and the build system, and the one-epoch accuracy runs check training, not a
# backend: the first pass runs them; here runs everything that executes kernels and messages
# (unit, MPI, PyTorch reference, examples).
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${hpf_openmp_mpich_args[@]}" \
      -DHPF_ENABLE_BENCHMARKS=OFF -DHPF_CHECK_HEADERS=OFF -DHPF_TEST_OPTIMIZATION= "${hpf_compiler_launcher[@]}" \
      ${HPF_CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs"

echo "== testing (unit, reference and MPI tests; OpenMP, $threads threads per rank; MPICH)"
hpf_ctest "$build" --output-on-failure -j "$jobs" -L "unit|mpi|reference" -LE "compile|consumer|accuracy|readme"
