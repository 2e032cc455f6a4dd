#!/bin/bash
# hpf-oracle calibrate times the layers with the threads training uses: OpenBLAS' and OpenMP's
# (oneDNN's) pools sized to Kokkos' host space, also when OMP_NUM_THREADS and OPENBLAS_NUM_THREADS
# are unset. Left at their defaults (every core), the busy calibration's processes spin against
# each other and time something training never runs. (The defaults are the core count, so the check
# bites on any machine with more than one core.)
# usage: calibrate_threads.sh HPF_ORACLE PROFILE
set -euo pipefail
oracle=$1 profile=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$profile" "$work/profile.json"
out=$(env -u OMP_NUM_THREADS -u OPENBLAS_NUM_THREADS "$oracle" calibrate --model cnn --batches 1 \
        --profile "$work/profile.json")
line=$(grep -m1 '^  threads: ' <<<"$out") || { echo "FAIL: no threads line in:"; echo "$out"; exit 1; }
echo "$line"
re='^  threads: Kokkos [A-Za-z]+ ([0-9]+), OpenBLAS ([0-9]+|-) \(.*\), OpenMP ([0-9]+|-)$'
[[ $line =~ $re ]] || { echo "FAIL: unexpected threads line"; exit 1; }
kokkos=${BASH_REMATCH[1]} blas=${BASH_REMATCH[2]} omp=${BASH_REMATCH[3]}
if [[ $blas == - && $omp == - ]]; then  # counted as skipped (SKIP_REGULAR_EXPRESSION), not passed
  echo "hpf-skip: neither OpenBLAS nor an OpenMP runtime is loaded: no library pool to check"
  exit 0
fi
status=0
for pool in "OpenBLAS:$blas" "OpenMP:$omp"; do
  name=${pool%%:*} count=${pool#*:}
  if [[ $count != - && $count != "$kokkos" ]]; then
    echo "FAIL: $name runs $count threads, Kokkos' host space $kokkos"
    status=1
  fi
done
grep -q 'calibrated cnn on fashion-mnist samples' <<<"$out" || { echo "FAIL: calibration did not finish"; status=1; }
[[ $status == 0 ]] && echo "PASS: the libraries run Kokkos' $kokkos thread(s)"
exit $status
