# shellcheck shell=bash
# hpf_ctest BUILD_DIR [ctest arguments...]: runs ctest on BUILD_DIR, then prints
#   == skipped tests: N (C not in this configuration, M missing what they need)
# naming each skipped test (by SKIP_RETURN_CODE / SKIP_REGULAR_EXPRESSION, or DISABLED) with the
# reason it printed, from ctest's JUnit report. Two kinds of skip:
#  - "not in this configuration" (tests/CMakeLists.txt, hpf_add_configuration_skip): the build's
#    Kokkos has no backend for them (the OpenMP tests of a Serial build); listed with the script
#    that runs them, never a failure: no package would make this build run them;
#  - any other skip: something the README's setup (scripts/lib/debian.sh) installs is missing,
#    so it fails unless HPF_ALLOW_SKIPS=1.
# Fails when ctest fails, when it wrote no report, or when the report cannot be read: a count that
# cannot be made is never reported as 0. Used by scripts/quickstart.sh test,
# scripts/test_openmp_mpich.sh and scripts/test_sanitizers.sh.
hpf_ctest() {
  local build=$1
  shift
  local junit status=0 skipped disabled count listed configuration missing
  junit=$(cd "$build" && pwd)/Testing/hpf-ctest-junit.xml
  rm -f "$junit"
  ctest --test-dir "$build" --output-junit "$junit" "$@" || status=$?
  if [ ! -f "$junit" ]; then
    echo "== skipped tests: unknown (ctest wrote no JUnit report to $junit)" >&2
    return $(( status ? status : 1 ))
  fi
  skipped=$(sed -n 's/^[[:space:]]*skipped="\([0-9]*\)".*/\1/p' "$junit" | head -n 1)
  disabled=$(sed -n 's/^[[:space:]]*disabled="\([0-9]*\)".*/\1/p' "$junit" | head -n 1)
  if [ -z "$skipped" ] || [ -z "$disabled" ]; then
    echo "== skipped tests: unknown (no skipped/disabled counts in $junit)" >&2
    return $(( status ? status : 1 ))
  fi
  count=$(( skipped + disabled ))
  # Each skipped test with the first hpf-skip line of its output (its reason), or its status.
  local listing
  listing=$(awk '
    match($0, /<testcase name="[^"]*"/) { name = substr($0, RSTART + 16, RLENGTH - 17); skip = 0; why = "" }
    /status="(notrun|disabled)"/ { skip = 1; st = ($0 ~ /disabled/) ? "disabled" : "not run" }
    skip && why == "" && match($0, /hpf-skip: .*/) { why = substr($0, RSTART + 10, RLENGTH - 10) }
    /<\/testcase>/ { if (skip) print name "\t" (why == "" ? st : why); skip = 0 }
  ' "$junit")
  listed=0 configuration=0
  [ -z "$listing" ] || listed=$(printf '%s\n' "$listing" | wc -l)
  [ -z "$listing" ] || configuration=$(printf '%s\n' "$listing" | grep -c $'\tnot in this configuration:' || true)
  if [ "$listed" -ne "$count" ]; then
    echo "== skipped tests: unknown (the report counts $count, but $listed skipped tests were found in $junit)" >&2
    return $(( status ? status : 1 ))
  fi
  missing=$(( count - configuration ))
  echo "== skipped tests: $count ($configuration not in this configuration, $missing missing what they need)"
  [ -z "$listing" ] || printf '%s\n' "$listing" | awk -F'\t' '{ printf "   %s: %s\n", $1, $2 }'
  [ "$configuration" -eq 0 ] ||
    echo "== not run here: the $configuration test(s) above that need another Kokkos backend; scripts/test_openmp_mpich.sh builds Kokkos OpenMP and runs them"
  [ "$status" -eq 0 ] || return "$status"
  if [ "$missing" -gt 0 ] && [ "${HPF_ALLOW_SKIPS:-0}" != 1 ]; then
    echo "== FAILED: $missing test(s) skipped for want of something; the README's setup (scripts/lib/debian.sh) installs what they need." \
         "Set HPF_ALLOW_SKIPS=1 to accept skips." >&2
    return 1
  fi
}
