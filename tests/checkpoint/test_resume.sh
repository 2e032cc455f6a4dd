#!/usr/bin/env bash
# Checkpoints under crashes and every layout (tests/checkpoint/train_checkpointed.cpp):
#  - a run killed by SIGKILL mid-epoch and resumed ends bitwise equal to an uninterrupted one,
#    under 1, 2, 4 and 6 ranks, with SGD and Adam;
#  - a checkpoint written by 2 stages x 2 replicas resumes under 3 stages x 2 and under one
#    process, bitwise equal;
#  - samples split into 2 slabs (Spatial<2>) on 2 ranks: killed and resumed, bitwise equal to the
#    one process computing both slabs; a checkpoint of 2 x 2 resumes on slabs;
#  - a kill during a save leaves the previous checkpoint, and resume reaches the same bits; resume
#    skips a damaged newest checkpoint and a half-written one;
#  - a corrupt, truncated, foreign-model or newer-format checkpoint is an error naming it, on
#    every rank, exit code 2.
# usage: test_resume.sh DRIVER PYTHON LAUNCHER [LAUNCHER FLAGS...]
set -uo pipefail
driver=$1 python=$2
shift 2
launcher=("$@")
compare=$(dirname "${BASH_SOURCE[0]}")/compare_checkpoints.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run NP ARGS...: the driver on NP ranks (0: one process without a launcher); output in $work/out
run() {
  local np=$1
  shift
  if [ "$np" = 0 ]; then
    timeout 120 "$driver" --layout trainer "$@" >"$work/out" 2>&1
  else
    timeout 120 "${launcher[@]}" -n "$np" "$driver" "$@" >"$work/out" 2>&1
  fi
}
same() {  # same A B: the two checkpoints hold the same bits
  if "$python" "$compare" "$1" "$2" >"$work/compare"; then
    echo "  $(cat "$work/compare")"
  else
    cat "$work/compare"
    fail "$3"
  fi
}
# expect_error WHAT PATTERN NP ARGS...: PATTERN on every rank and exit code 2 (all ranks stop
# alike); one process without MPI peers reports a plain error, exit code 1.
expect_error() {
  local what=$1 pattern=$2 np=$3
  shift 3
  run "$np" "$@"
  local code=$? ranks=$((np == 0 ? 1 : np)) expected=$((np == 0 ? 1 : 2)) found
  found=$(grep -cE "hpf: error on rank [0-9]+: .*$pattern" "$work/out")
  if [ "$code" != "$expected" ] || [ "$found" != "$ranks" ]; then
    cat "$work/out"
    fail "$what: exit code $code (expected $expected), message on $found of $ranks ranks: $pattern"
  else
    echo "ok: $what: $(grep -m1 -oE "hpf: error on rank 0: .*" "$work/out" | cut -c1-220)"
  fi
}

layout_args() {  # layout_args NP: the driver's layout flags for NP ranks (2 data shards always)
  case $1 in
    0) echo "" ;;
    2) echo "--stages 1" ;;
    4) echo "--stages 2" ;;
    6) echo "--stages 3" ;;
  esac
}

for optimizer in sgd adam; do
  extra=()
  [ $optimizer = adam ] && extra=(--adam)
  run 0 --dir "$work/$optimizer-reference" "${extra[@]}" || { cat "$work/out"; fail "$optimizer reference run"; continue; }
  reference=$work/$optimizer-reference/step-00000024
  nps="0 2 4 6"
  [ $optimizer = adam ] && nps="4"
  for np in $nps; do
    dir=$work/$optimizer-np$np
    # shellcheck disable=SC2046
    run "$np" $(layout_args "$np") --dir "$dir" --every 5 --kill-at 8 "${extra[@]}"
    code=$?
    if [ $code = 0 ] || [ ! -d "$dir/step-00000005" ] || [ -d "$dir/step-00000010" ]; then
      cat "$work/out"
      fail "$optimizer np$np: killed after step 8: exit code $code, expected non-zero with step 5 saved and not step 10"
      continue
    fi
    # shellcheck disable=SC2046
    run "$np" $(layout_args "$np") --dir "$dir" --every 5 --resume "${extra[@]}" || { cat "$work/out"; fail "$optimizer np$np resume"; continue; }
    grep -q "resumed from .*step-00000005 at epoch 0, step 5" "$work/out" || fail "$optimizer np$np: did not resume from step 5"
    echo "$optimizer, $np ranks (0: one process), killed at step 8, resumed from step 5:"
    same "$reference" "$dir/step-00000024" "$optimizer np$np resumed"
  done
done

reference=$work/sgd-reference/step-00000024
saved=$work/sgd-np4/step-00000005
echo "written by 2 stages x 2 replicas, resumed by 3 stages x 2 replicas and by one process:"
run 6 --stages 3 --dir "$work/across6" --resume-from "$saved" && same "$reference" "$work/across6/step-00000024" "np4 -> np6" || fail "np4 -> np6"
run 0 --dir "$work/across1" --resume-from "$saved" && same "$reference" "$work/across1/step-00000024" "np4 -> 1" || fail "np4 -> 1"

# Samples in 2 slabs over 2 ranks: the group's member 0 writes what every member holds. Killed
# and resumed, it ends on the bits of one process computing both slabs; and a checkpoint of
# 2 stages x 2 replicas resumes on slabs (other arithmetic from there: no reference to compare).
run 0 --layout slabs-trainer --dir "$work/slabs-reference" || { cat "$work/out"; fail "slabs reference run"; }
run 2 --layout slabs --dir "$work/slabs" --every 5 --kill-at 8
run 2 --layout slabs --dir "$work/slabs" --every 5 --resume
if grep -q "resumed from .*step-00000005 at epoch 0, step 5" "$work/out"; then
  echo "slabs, 2 ranks, killed at step 8, resumed from step 5:"
  same "$work/slabs-reference/step-00000024" "$work/slabs/step-00000024" "slabs resumed"
else
  cat "$work/out"
  fail "slabs: did not resume from step 5"
fi
run 2 --layout slabs --dir "$work/slabs-across" --resume-from "$saved"
if grep -q "resumed from .*step-00000005" "$work/out" && [ -d "$work/slabs-across/step-00000024" ]; then
  echo "ok: written by 2 stages x 2 replicas, resumed on 2 slabs and trained to step 24"
else
  cat "$work/out"
  fail "np4 -> slabs"
fi

# A damaged newest checkpoint and a half-written one (what a crash during a save leaves) are
# skipped: resume takes step 15 and still ends on the reference's bits.
damaged=$work/damaged
run 4 --stages 2 --dir "$damaged" --every 5 --kill-at 17 || true
cp -r "$damaged/step-00000015" "$damaged/.step-00000020.partial"
rm "$damaged/.step-00000020.partial/model.safetensors.index.json"
cp -r "$damaged/step-00000015" "$damaged/step-00000016"
sed -i 's/"global_step": 15/"global_step": 16/' "$damaged/step-00000016/training_state.json"  # CRC no longer matches
run 4 --stages 2 --dir "$damaged" --every 5 --resume
if grep -q "skipping a damaged checkpoint: .*step-00000016/training_state.json: is corrupt" "$work/out" &&
   grep -q "resumed from .*step-00000015" "$work/out"; then
  echo "ok: resume skipped the damaged step 16 and the half-written step 20, resumed from step 15"
  same "$reference" "$damaged/step-00000024" "resume past damaged checkpoints"
else
  cat "$work/out"
  fail "resume past damaged checkpoints"
fi

# A real crash in the middle of a save (rank 0 killed after the stage files of step 10 are
# written, before the index): step 5 stays the newest checkpoint and resume reaches the same bits.
crashed=$work/crashed
HPF_FAULT_KILL_IN_CHECKPOINT=10 run 4 --stages 2 --dir "$crashed" --every 5
code=$?
if [ $code != 0 ] && [ -d "$crashed/.step-00000010.partial" ] && [ ! -d "$crashed/step-00000010" ]; then
  run 4 --stages 2 --dir "$crashed" --every 5 --resume
  if grep -q "resumed from .*step-00000005" "$work/out"; then
    echo "ok: killed while saving step 10 (exit code $code): resumed from step 5"
    same "$reference" "$crashed/step-00000024" "resume after a crash during a save"
  else
    cat "$work/out"
    fail "resume after a crash during a save"
  fi
else
  cat "$work/out"
  ls -a "$crashed"
  fail "a crash during a save: exit code $code, expected non-zero with only a partial step 10"
fi

# By time (rank 0's clock decides for all: here every step) and keeping the newest 2.
timed=$work/timed
run 4 --stages 2 --dir "$timed" --every-seconds 0.000001 --keep 2
kept=$(cd "$timed" && echo step-*)
if [ "$kept" = "step-00000023 step-00000024" ]; then
  echo "ok: a checkpoint every 1 us, keeping 2: $kept"
else
  cat "$work/out"
  fail "checkpoints by time, keeping 2: found '$kept'"
fi

bad=$work/bad
cp -r "$saved" "$bad-corrupt"
printf '\x7f' | dd of="$bad-corrupt/model-00002-of-00002.safetensors" bs=1 seek=200 conv=notrunc status=none
expect_error "corrupt checkpoint" "model-00002-of-00002.safetensors: is corrupt: its CRC-32 is" 4 --stages 2 --resume-from "$bad-corrupt"
cp -r "$saved" "$bad-truncated"
truncate -s 100 "$bad-truncated/model-00001-of-00002.safetensors"
expect_error "truncated checkpoint" "model-00001-of-00002.safetensors: is 100 bytes but the checkpoint index says" 2 --stages 1 --resume-from "$bad-truncated"
expect_error "checkpoint of another model" "tensor '4.weight' is \[16, 256\] in the checkpoint but \[12, 256\] in this model" 4 --stages 2 --model b --resume-from "$saved"
cp -r "$saved" "$bad-newer"
sed -i 's/"format_version": 1/"format_version": 2/' "$bad-newer/model.safetensors.index.json"
expect_error "checkpoint of a newer format" "has format version 2, newer than the 1 this hpf reads" 2 --stages 1 --resume-from "$bad-newer"
expect_error "not a checkpoint" "is not a checkpoint: it has no model.safetensors.index.json" 0 --resume-from "$work"
expect_error "checkpoint written with another optimizer" "was written with the optimizer sgd\(.*\); this run uses adam" 2 --stages 1 --adam --resume-from "$saved"

if [ $failures -gt 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all checkpoint checks passed"
