#!/usr/bin/env bash
# Gradients summed per host first (StepOptions::hierarchy) across emulated hosts, as root (a few
# minutes): on 2 hosts x 2 ranks and 3 hosts x 2 ranks (each host a block of consecutive
# replicas: the ordered reduction goes through the hosts' leaders) and on 2 hosts x 3 ranks (not
# a power of two: the ordered reduction stays flat, MPI's allreduce goes through the leaders),
# tests/parallel/test_host_hierarchy.cpp passes and the MLP trains every layout of the world size
# bit for bit as one process (tests/parallel/test_equivalence_mlp.cpp, hierarchy automatic, and
# with gradients exchanged as bf16: a host's partial sum crosses hosts as float). With a progress
# thread (StepOptions::exchange_progress, HPF_MPI_THREADS=multiple) on 4 hosts x 1 rank and 2 x 2,
# tests/parallel/test_progress_thread.cpp: a message crosses TCP while both ranks compute without
# calling MPI, and every layout trains bit for bit as one process. Samples split into slabs
# (hpf::Spatial<G>) on 4 hosts x 1 rank, tests/parallel/test_equivalence_spatial.cpp: halos and the
# group's sums cross TCP, and every layout of a CNN and a 3-D CNN trains bit for bit as one process.
# Fails, never skips, when it cannot run (scripts/fabric/emulate.sh's preconditions).
#
#   bash tests/fabric/test_hierarchy.sh [BUILD_DIR]
#
# BUILD_DIR (default build-fabric) holds the tests built with Open MPI; they are built there
# (Release, Debian's Kokkos, Open MPI's wrappers) when it does not hold them yet.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build-fabric}
tests=(hpf_parallel_test_host_hierarchy hpf_parallel_test_equivalence_mlp hpf_parallel_test_progress_thread
       hpf_parallel_test_equivalence_spatial)
export HPF_FABRIC_PREFIX=hpfy HPF_FABRIC_NET=10.77.8.0/24 HPF_FABRIC_TIMEOUT=600
[ "$(id -u)" -eq 0 ] || { echo "FAILED: must run as root (network namespaces, veth, tc)"; exit 1; }

missing=0
for t in "${tests[@]}"; do [ -x "$build/tests/$t" ] || missing=1; done
if [ "$missing" = 1 ]; then
  # shellcheck source=../../scripts/lib/ccache.sh
  source "$root/scripts/lib/ccache.sh"
  configure_log=$(mktemp)
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${hpf_compiler_launcher[@]}" \
    -DMPI_CXX_COMPILER=mpicxx.openmpi -DMPIEXEC_EXECUTABLE=/usr/bin/mpirun.openmpi > "$configure_log" 2>&1 ||
    { cat "$configure_log"; rm -f "$configure_log"; echo "FAILED: configuring $build"; exit 1; }
  rm -f "$configure_log"
  cmake --build "$build" --target "${tests[@]}"
fi

passed=0 failed=0
# on HOSTS SLOTS TEST [ARGS...]: TEST as HOSTS x SLOTS ranks on an unshaped fabric.
on() {
  local hosts=$1 slots=$2 test=$3 log
  shift 3
  log=$(mktemp)
  # Passed only with at least one test case run (a filter that matches none passes in doctest).
  if HPF_FABRIC_SLOTS=$slots bash "$root/scripts/fabric/emulate.sh" run "$hosts" unshaped -- \
       "$build/tests/$test" --no-colors "$@" > "$log" 2>&1 && grep -qE 'test cases: +[1-9][0-9]* \| +[1-9]' "$log"; then
    passed=$((passed + 1))
    echo "ok: $test on $hosts hosts x $slots ranks"
  else
    failed=$((failed + 1))
    echo "FAILED: $test on $hosts hosts x $slots ranks"
    tail -n 40 "$log" | sed 's/^/  | /'
  fi
  rm -f "$log"
}

for layout in "2 2" "3 2" "2 3"; do
  # shellcheck disable=SC2086  # hosts and slots
  on $layout hpf_parallel_test_host_hierarchy
  # shellcheck disable=SC2086
  on $layout hpf_parallel_test_equivalence_mlp --test-case='MLP: every layout*,MLP: gradients exchanged as bf16*'
done
for layout in "4 1" "2 2"; do
  # shellcheck disable=SC2086
  HPF_MPI_THREADS=multiple on $layout hpf_parallel_test_progress_thread
done
on 4 1 hpf_parallel_test_equivalence_spatial --test-case='Spatial split: every layout*,Spatial split: a 3-D CNN*'
echo "== hierarchy, progress thread and slabs across emulated hosts: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
