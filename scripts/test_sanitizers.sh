#!/usr/bin/env bash
# The unit and MPI tests built with AddressSanitizer + UndefinedBehaviorSanitizer (g++, -O1 -g1,
# CMakePresets.json's "asan-ubsan" preset) and run so that any finding fails: an ASan error, a
# leak, or undefined behaviour in any process, MPI ranks included. Two configurations:
#
#   scripts/test_sanitizers.sh [serial]     Kokkos Serial (Debian's) and the MPI on PATH (Open MPI),
#                                           in build-asan
#   scripts/test_sanitizers.sh openmp-mpich Kokkos OpenMP with HPF_TEST_THREADS threads per rank
#                                           (default 2) and MPICH, as scripts/test_openmp_mpich.sh,
#                                           in build-asan-openmp-mpich; also the PyTorch reference
#                                           and example tests, so that it runs what that pass runs
# Options, after the configuration:
#   --ci           what .ci/run runs: in openmp-mpich, the tests of the code that manages memory by
#                  hand or shares it between threads and processes (CI_TESTS below), and only
#                  the programs they run are built; the Release pass of the README's test command
#                  runs every test, and this script without --ci runs them all under the sanitizers
#   --build-only   configure and build, run nothing (.ci/run builds while the fresh roots download)
#   --test-only    run the tests of an earlier build (building first what is out of date)
#
# .ci/run calls `openmp-mpich --ci`: the suite's OpenMP / MPICH pass and its sanitizer pass in one
# build. What that leaves out, and the command that runs it, is in docs/testing.md.
#
# Left out always, and why: the compile-fail, compile-budget, header, consumer and README tests
# (they check compilers and the build system, not running code), the benchmarks (not built here),
# the accuracy runs, and in `serial` the PyTorch reference tests and the examples (the Release pass
# of the README's test command runs them on that configuration). In `openmp-mpich`, the MLP's and
# the ResNet's equivalence on 6 ranks (the Release pass runs them): under ASan, 6 ranks on CI's 2
# cores took 114 s and 63 s of the pass's 645 s, its longest tests, while the CNN's
# (22 s, kept) trains the same layouts, 1x6, 2x3 and 3x2, through the same engine, and the MLP's
# and the ResNet's other rank counts stay. Open MPI's and MPICH's own allocations that outlive
# MPI_Finalize are suppressed by tests/sanitizers/lsan.supp, which names MPI-stack libraries only.
#
# Every test's whole output goes to the JUnit report, and every sanitizer report in it counts as a
# finding, so a report from a test that is expected to fail (a rank aborting on purpose) fails the
# run too; the tests with reports are named at the end. (Not log_path: with ASan and UBSan together,
# g++'s UBSan ignores it and writes to stderr.) Ranks inherit the sanitizer variables from mpiexec
# (one machine: Open MPI and MPICH start local ranks with the launcher's environment).
# Prints "== skipped tests: N" (scripts/lib/ctest.sh) and
#   == sanitizers: build B s (S steps), tests T s, tests run R, failed F, findings N
# and writes those numbers, the backend and the ctest selection to <build>/sanitizer-summary.txt
# (benchmarks/run_sanitizers.py publishes them in benchmarks/RESULTS.md).
# Environment: HPF_BUILD_DIR, HPF_JOBS (default: all cores), HPF_TEST_THREADS, HPF_CMAKE_ARGS.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
configuration=serial
case "${1:-}" in serial|openmp-mpich) configuration=$1; shift ;; esac
ci=0 build_step=1 test_step=1
for option in "$@"; do
  case "$option" in
    --ci) ci=1 ;;
    --build-only) test_step=0 ;;
    --test-only) build_step=0 ;;
    *) echo "usage: $0 [serial|openmp-mpich] [--ci] [--build-only|--test-only]" >&2; exit 2 ;;
  esac
done
[ "$build_step" = 1 ] || [ "$test_step" = 1 ] || { echo "$0: --build-only and --test-only exclude each other" >&2; exit 2; }
[ "$ci" = 0 ] || [ "$configuration" = openmp-mpich ] || { echo "$0: --ci is a variant of openmp-mpich" >&2; exit 2; }
jobs=${HPF_JOBS:-$(nproc)}
case "$configuration" in
  serial) build=${HPF_BUILD_DIR:-$root/build-asan} ;;
  openmp-mpich) build=${HPF_BUILD_DIR:-$root/build-asan-openmp-mpich} ;;
esac
# shellcheck source=lib/debian.sh
source "$root/scripts/lib/debian.sh"
# shellcheck source=lib/ctest.sh
source "$root/scripts/lib/ctest.sh"
# shellcheck source=lib/ccache.sh
source "$root/scripts/lib/ccache.sh"
# shellcheck source=lib/openmp_mpich.sh
source "$root/scripts/lib/openmp_mpich.sh"
hpf_install_packages "${HPF_PACKAGES_TEST[@]}"

configure=()
backend="Kokkos Serial, Open MPI"
labels="unit|mpi"
filters=(-LE "compile|consumer|accuracy|readme|reference|example|bench" -E '^hpf\.example\.disabled$')
if [ "$configuration" = openmp-mpich ]; then
  hpf_openmp_mpich_configuration "${HPF_TEST_THREADS:-2}" "$jobs"
  backend="Kokkos OpenMP with ${HPF_TEST_THREADS:-2} threads per rank, MPICH"
  configure=("${hpf_openmp_mpich_args[@]}" -DHPF_ENABLE_REFERENCE_TESTS=ON -DHPF_ENABLE_EXAMPLES=ON)
  labels="unit|mpi|reference"
  filters=(-LE "compile|consumer|accuracy|readme|bench" -E '^hpf\.parallel\.test_equivalence_(mlp|resnet)\.np6$')
  if [ "$ci" = 1 ]; then
    # CI's selection (2 cores, 45 minutes for everything): where hpf itself handles bytes, not
    # Kokkos views: MPI transfers and message pieces, gradient buckets (also scattered and summed
    # per host first) and the step engine in every strategy (the CNN's equivalence at 1, 2, 4 and
    # 6 ranks), the progress thread beside the training thread (MPI_THREAD_MULTIPLE), Dense layers split over groups (their blocks of rows and columns, in one process
    # and across ranks), work and data shards side by side on OpenMP threads (test_thread_groups), the
    # OpenMP-only set-up (BLAS threads, re-execution),
    # the watchdog and failing ranks, the timeline's recorder, the IDX, NumPy, text, safetensors and
    # checkpoint readers and writers, checkpointed runs killed and resumed. Left to the full pass:
    # the layer, model, optimizer, oracle and zoo tests (kernels on Kokkos views, gradient-checked
    # and compared with PyTorch in the Release pass), the MLP's and ResNet's equivalence, whole
    # replicas' shards on threads (test_shards_per_replica), a rank killed or stopped mid-run
    # (faults), the examples and the PyTorch reference tests.
    backend+=" (CI's selection)"
    configure=("${hpf_openmp_mpich_args[@]}" -DHPF_ENABLE_REFERENCE_TESTS=OFF -DHPF_ENABLE_EXAMPLES=OFF)
    labels="unit|mpi"
    CI_TESTS='^hpf\.(comm|io|system)\.|^hpf\.trace\.test_recorder$|^hpf\.checkpoint\.resume$|^hpf\.data\.test_(idx|npy|text)$'
    CI_TESTS+='|^hpf\.parallel\.(test_equivalence_cnn|test_equivalence_split|test_equivalence_spatial|test_message_pieces|test_host_hierarchy|test_progress_thread)\.np[0-9]+$'
    CI_TESTS+='|^hpf\.parallel\.test_thread_groups$'
    CI_TESTS+='|^hpf\.layers\.(test_bf16_gemm|test_matmul_precision|test_layer_split|test_spatial_split)$'
    filters=(-LE "compile|consumer|accuracy|readme|bench" -R "$CI_TESTS")
  fi
fi

# selected_targets: with --ci, `targets` are the programs the selected tests run, read from
# CTest's own description of their commands (paths in the build tree, also inside -DARGS=a;b
# lists); a test whose program is not built yet has no command there, and is named after it
# (hpf_add_test: hpf.AREA.NAME runs hpf_AREA_NAME). Otherwise empty: everything is built.
targets=()
selected_targets() {
  [ "$ci" = 1 ] || return 0
  mapfile -t targets < <(ctest --test-dir "$build" -N -L "$labels" "${filters[@]}" --show-only=json-v1 |
    /usr/bin/python3 -c '
import json, os, re, sys
build = os.path.realpath(sys.argv[1])
for test in json.load(sys.stdin)["tests"]:
    if not test.get("command"):
        print(re.sub(r"\.np[0-9]+$", "", test["name"]).replace(".", "_"))
        continue
    for word in re.split(r"[;=]", ";".join(test["command"])):
        name = os.path.basename(word)
        if os.path.realpath(word).startswith(build + os.sep) and re.fullmatch(r"hpf[-_][A-Za-z0-9_-]+", name):
            print(name)' "$build" | sort -u)
  [ ${#targets[@]} -gt 0 ] || { echo "$0: --ci selected no test programs in $build" >&2; exit 1; }
  echo "== building the ${#targets[@]} programs of CI's selection: ${targets[*]}"
}

cd "$root"
if [ "$build_step" = 1 ]; then
  echo "== configuring and building the tests with ASan + UBSan in $build ($configuration)"
  started=$(date +%s)
  # shellcheck disable=SC2086
  cmake --preset asan-ubsan -B "$build" "${configure[@]}" "${hpf_compiler_launcher[@]}" ${HPF_CMAKE_ARGS:-}
  selected_targets
  cmake --build "$build" -j "$jobs" ${targets[@]:+--target "${targets[@]}"} | tee "$build/sanitizer-build.log"
  built=$(date +%s)
  echo "$(( built - started ))" > "$build/sanitizer-build-seconds.txt"
  [ "$test_step" = 1 ] || exit 0
else
  [ -f "$build/sanitizer-build-seconds.txt" ] || { echo "$0: --test-only: no build in $build" >&2; exit 1; }
  # The tests must run what the sources say: whatever is out of date is built (normally nothing).
  selected_targets
  cmake --build "$build" -j "$jobs" ${targets[@]:+--target "${targets[@]}"}
  built=$(date +%s)
  started=$(( built - $(cat "$build/sanitizer-build-seconds.txt") ))
fi
steps=$(sed -n 's/^\[[0-9]*\/\([0-9]*\)\].*/\1/p' "$build/sanitizer-build.log" | tail -n 1)

# halt_on_error and -fno-sanitize-recover=all: the first finding ends the process with an error.
# fast_unwind_on_malloc=0: see tests/sanitizers/lsan.supp.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:fast_unwind_on_malloc=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0"

echo "== testing ($labels tests under ASan + UBSan, $configuration)"
status=0
hpf_ctest "$build" --output-on-failure -j "$jobs" -L "$labels" "${filters[@]}" \
          --test-output-size-passed 8000000 --test-output-size-failed 8000000 || status=$?
tested=$(date +%s)

# Tests whose output holds a sanitizer report (passed or failed).
junit=$build/Testing/hpf-ctest-junit.xml
[ -f "$junit" ] || { echo "test_sanitizers.sh: ctest wrote no $junit" >&2; exit 1; }
mapfile -t reports < <(awk '
  match($0, /<testcase name="[^"]*"/) { name = substr($0, RSTART + 16, RLENGTH - 17) }
  /ERROR: (Address|Leak|UndefinedBehavior)Sanitizer|runtime error:/ && !(name in seen) { seen[name] = 1; print name }
' "$junit")
for name in "${reports[@]}"; do echo "== sanitizer report in $name (its output is above or in $junit)"; done
run=$(sed -n 's/^[[:space:]]*tests="\([0-9]*\)".*/\1/p' "$junit" | head -n 1)
failed=$(sed -n 's/^[[:space:]]*failures="\([0-9]*\)".*/\1/p' "$junit" | head -n 1)
mpi_tests=$(ctest --test-dir "$build" -N -L mpi "${filters[@]}" | grep -cE '^ *Test +#' || true)
summary="configuration=$configuration build_s=$(( built - started )) build_steps=${steps:-0} test_s=$(( tested - built )) tests=${run:-0}"
summary+=" mpi_tests=$mpi_tests failed=${failed:-0} findings=${#reports[@]}"
# Then, a line each, what was built and run (benchmarks/run_sanitizers.py describes the run by them).
selection="-L '$labels'"
for argument in "${filters[@]}"; do
  case "$argument" in -*) selection+=" $argument" ;; *) selection+=" '$argument'" ;; esac
done
printf '%s\nbackend: %s\nctest: %s\n' "$summary" "$backend" "$selection" > "$build/sanitizer-summary.txt"
echo "== sanitizers: build $(( built - started )) s (${steps:-0} steps), tests $(( tested - built )) s, tests run ${run:-?}," \
     "failed ${failed:-?}, findings ${#reports[@]}"
if [ "${#reports[@]}" -gt 0 ]; then
  echo "== FAILED: sanitizer reports in ${#reports[@]} test(s): ${reports[*]}" >&2
  status=1
fi
exit "$status"
