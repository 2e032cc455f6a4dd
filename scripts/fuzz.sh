#!/usr/bin/env bash
# Builds hpf's libFuzzer targets (tests/fuzz: idx, npy, safetensors, json) with clang and runs each for
# a given time on a fresh copy of its committed corpus. Not part of CI's default run.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     SECONDS per target (default 600), TARGETs default all
#
# Per target it prints the libFuzzer log's tail and one line
#   == fuzz target=T seconds=S executions=N exec_per_s=E cov=C ft=F corpus=K crashed=no|yes
# (cov/ft: libFuzzer's coverage counters at the end; corpus: inputs in the working corpus).
# A finding (crash, sanitizer report, leak, timeout, allocation over -malloc_limit_mb) is saved as
# tests/fuzz/corpus/<target>/regress-<kind>-<sha1 prefix>: the hpf.fuzz.<target>.corpus test
# (ctest -L fuzz in the fuzz build) then fails until the reader is fixed; commit it with the fix.
# Exit status 1 if any target found something.
# Installs (Debian, only what is missing) the build's packages plus clang and libclang-rt-14-dev
# (libFuzzer's runtime). Environment: HPF_FUZZ_BUILD_DIR (default build-fuzz), HPF_FUZZ_PARALLEL
# (targets run at once, default 1), HPF_JOBS (build jobs, default all cores).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; }
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
seconds=${1:-600}
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then echo "fuzz.sh: SECONDS must be a positive integer" >&2; exit 2; fi
shift $(( $# > 0 ? 1 : 0 ))
all_targets=(idx npy safetensors json)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target '$t' (${all_targets[*]})" >&2; exit 2; }
done
build=${HPF_FUZZ_BUILD_DIR:-$root/build-fuzz}
parallel=${HPF_FUZZ_PARALLEL:-1}
jobs=${HPF_JOBS:-$(nproc)}

# shellcheck source=lib/debian.sh
source "$root/scripts/lib/debian.sh"
hpf_install_packages "${HPF_PACKAGES_TRAIN[@]}" clang libclang-rt-14-dev
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
  'extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }' > "$probe/p.cpp"
clang++ -fsanitize=fuzzer "$probe/p.cpp" -o "$probe/p" 2>"$probe/err" || {
  cat "$probe/err" >&2
  echo "fuzz.sh: clang++ -fsanitize=fuzzer does not link (libFuzzer comes with libclang-rt-14-dev)" >&2
  exit 1
}

echo "== building the fuzz targets in $build (clang, -fsanitize=fuzzer,address,undefined)"
cd "$root"
cmake --preset fuzz -B "$build" >/dev/null
cmake --build "$build" -j "$jobs" --target "${targets[@]/#/hpf_fuzz_}"

# Limits: see tests/fuzz/CMakeLists.txt (a finding is also any allocation over 64 MiB or an input
# slower than 10 s). Inputs up to 4 KiB: headers, a few tensors or images, gzip members.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# hpf_fuzz_idx writes each input to a scratch file (the reader takes a path): in memory where
# possible, which makes it about 2.5 times faster than on disk.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
run_target() {
  local t=$1 work=$build/fuzz-runs/$1 dict=()
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp "$root/tests/fuzz/corpus/$t"/* "$work/corpus/"
  [ "$t" = idx ] || dict=(-dict="$root/tests/fuzz/json.dict")
  local status=0
  "$build/tests/fuzz/hpf_fuzz_$t" "$work/corpus" "${dict[@]}" -max_total_time="$seconds" -max_len=4096 \
    -rss_limit_mb=1024 -malloc_limit_mb=64 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" >"$work/log.txt" 2>&1 || status=$?
  echo "$status" >"$work/status"
}
running=0
for t in "${targets[@]}"; do
  echo "== fuzzing $t for $seconds s"
  run_target "$t" &
  running=$(( running + 1 ))
  if [ "$running" -ge "$parallel" ]; then wait -n || true; running=$(( running - 1 )); fi
done
wait

found=0
for t in "${targets[@]}"; do
  work=$build/fuzz-runs/$t
  status=$(cat "$work/status")
  echo "== $t: libFuzzer's last lines ($work/log.txt)"
  grep -E '^#[0-9]+' "$work/log.txt" | tail -n 2 || true
  stat() { sed -n "s/^stat::$1: *\([0-9]*\).*/\1/p" "$work/log.txt" | tail -n 1; }
  last=$(grep -E '^#[0-9]+.*cov: ' "$work/log.txt" | tail -n 1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  crashed=no
  for artifact in "$work/artifacts"/*; do
    [ -f "$artifact" ] || continue
    crashed=yes
    kind=$(basename "$artifact" | cut -d- -f1)
    saved=$root/tests/fuzz/corpus/$t/regress-$kind-$(sha1sum "$artifact" | cut -c1-12)
    cp "$artifact" "$saved"
    echo "== $t: FINDING ($kind) saved as $saved; its report:"
    grep -E -A30 '^==[0-9]+==ERROR|runtime error|^==[0-9]+== ERROR' "$work/log.txt" | head -n 60 || true
  done
  [ "$status" -eq 0 ] || crashed=yes
  [ "$crashed" = no ] || found=1
  echo "== fuzz target=$t seconds=$seconds executions=$(stat number_of_executed_units) exec_per_s=$(stat average_exec_per_sec)" \
       "cov=${cov:-?} ft=${ft:-?} corpus=$(find "$work/corpus" -type f | wc -l) crashed=$crashed"
done
exit "$found"
