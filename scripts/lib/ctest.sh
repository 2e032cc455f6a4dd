# shellcheck shell=bash
# hpf_ctest BUILD_DIR [ctest arguments...]: runs ctest on BUILD_DIR, then prints
#   == skipped tests: N
# (tests CTest skipped, by SKIP_RETURN_CODE / SKIP_REGULAR_EXPRESSION, or found DISABLED), naming
# each, from ctest's JUnit report. Fails when ctest fails, and when N > 0 unless HPF_ALLOW_SKIPS=1:
# the README's setup installs every tool the tests need, so a skip there is a missing package,
# not a pass. Used by scripts/quickstart.sh test and scripts/test_openmp_mpich.sh.
hpf_ctest() {
  local build=$1
  shift
  local junit status=0 skipped disabled count
  junit=$(cd "$build" && pwd)/Testing/hpf-ctest-junit.xml
  rm -f "$junit"
  ctest --test-dir "$build" --output-junit "$junit" "$@" || status=$?
  if [ ! -f "$junit" ]; then
    echo "== skipped tests: unknown (ctest wrote no JUnit report to $junit)" >&2
    return $(( status ? status : 1 ))
  fi
  skipped=$(sed -n 's/^[[:space:]]*skipped="\([0-9]*\)".*/\1/p' "$junit" | head -n 1)
  disabled=$(sed -n 's/^[[:space:]]*disabled="\([0-9]*\)".*/\1/p' "$junit" | head -n 1)
  count=$(( ${skipped:-0} + ${disabled:-0} ))
  echo "== skipped tests: $count"
  sed -n 's/^.*<testcase name="\([^"]*\)".*status="\(notrun\|disabled\)".*$/   \1 (\2)/p' "$junit"
  [ "$status" -eq 0 ] || return "$status"
  if [ "$count" -gt 0 ] && [ "${HPF_ALLOW_SKIPS:-0}" != 1 ]; then
    echo "== FAILED: $count test(s) skipped; the README's setup (scripts/lib/debian.sh) installs what they need." \
         "Set HPF_ALLOW_SKIPS=1 to accept skips." >&2
    return 1
  fi
}
