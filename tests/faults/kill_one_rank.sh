#!/usr/bin/env bash
# Fault test (issue 14): while a 4-rank hybrid training run is under way, signal one rank (not
# rank 0) and require the job to end within a bound with a non-zero exit code.
#
#   kill_one_rank.sh [--signal KILL|STOP] [--rank R] [--within S] [--expect REGEX] -- \
#                    <launcher> <launcher flags...> <program>
#
# The command after `--` (e.g. `mpiexec -n 4 hpf_faults_train_until_killed`) is run with one more
# argument, a fresh directory where every rank writes rank<R>.pid. Once all ranks have written
# theirs and rank 0 has printed a progress line (training is under way), rank R (default 1) gets
# SIGKILL (default; the launcher or, failing that, the peers' wait limit ends the job) or SIGSTOP
# (a hung rank: only the peers' watchdog can end the job; set HPF_WAIT_TIMEOUT well below S).
# Passes when the launcher exits non-zero within S seconds (default 30) of the signal and the
# output matches REGEX (if given); prints the measured time. Whatever happens, the launcher's
# process group and every rank are killed before the script exits, so nothing is left behind;
# its own bounds (60 s to start training, S after the signal) stay below CTest's TIMEOUT (120 s),
# whose SIGKILL of the script would leave the launcher (in its own session) running.
set -uo pipefail

signal=KILL rank=1 within=30 expect=""
while [[ $# -gt 0 && $1 != -- ]]; do
  case $1 in
    --signal) signal=$2; shift 2 ;;
    --rank) rank=$2; shift 2 ;;
    --within) within=$2; shift 2 ;;
    --expect) expect=$2; shift 2 ;;
    *) echo "kill_one_rank.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $# -ge 2 && $1 == -- ]] || { echo "usage: kill_one_rank.sh [options] -- <launcher> <flags...> <program>" >&2; exit 2; }
shift
[[ $rank != 0 ]] || { echo "kill_one_rank.sh: signal a rank other than 0" >&2; exit 2; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/hpf-kill-one-rank.XXXXXX")
log=$dir/output.log
launcher=""
cleanup() {
  # The launcher leads its own process group (setsid below); ranks outside it (a launcher that
  # moves them) are found by their pid files.
  if [[ -n $launcher ]] && kill -0 "$launcher" 2>/dev/null; then kill -KILL -- "-$launcher" 2>/dev/null; fi
  for f in "$dir"/rank*.pid; do
    [[ -f $f ]] || continue
    p=$(<"$f")
    kill -CONT "$p" 2>/dev/null
    kill -KILL "$p" 2>/dev/null
  done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP  # so that the EXIT trap runs when CTest or a user stops the script
show_output() {
  echo "--- output of the run (last 40 lines):"; tail -n 40 "$log"; echo "---"
}
fail() {
  show_output
  echo "FAIL: $*"
  exit 1
}

now() { date +%s.%N; }
elapsed_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

setsid "$@" "$dir" >"$log" 2>&1 &
launcher=$!
echo "started: $* $dir (launcher pid $launcher)"

# Training is under way once every rank has written its pid and rank 0 reports progress.
started=$(now)
ranks=0
while :; do
  kill -0 "$launcher" 2>/dev/null || fail "the run ended before training was under way"
  ranks=$(find "$dir" -name 'rank*.pid' -size +0 | wc -l)
  if [[ $ranks -ge 2 && -s $dir/rank$rank.pid ]] && grep -q "step" "$log"; then break; fi
  if awk -v t="$(elapsed_since "$started")" 'BEGIN { exit !(t > 60) }'; then
    fail "training was not under way after 60 s ($ranks pid files)"
  fi
  sleep 0.2
done
sleep 1  # a few more steps: every rank is inside the step loop
victim=$(<"$dir/rank$rank.pid")
echo "training under way after $(elapsed_since "$started") s on $ranks ranks; sending SIG$signal to rank $rank (pid $victim)"
signalled=$(now)
kill "-$signal" "$victim" || fail "could not signal rank $rank (pid $victim)"

# The launcher must exit within the bound; poll so that a hang is seen rather than waited out.
while kill -0 "$launcher" 2>/dev/null; do
  if awk -v t="$(elapsed_since "$signalled")" -v w="$within" 'BEGIN { exit !(t > w) }'; then
    fail "the job still runs $within s after SIG$signal of rank $rank"
  fi
  sleep 0.1
done
wait "$launcher"
code=$?
took=$(elapsed_since "$signalled")
show_output
echo "the job ended $took s after SIG$signal of rank $rank, exit code $code"
[[ $code -ne 0 ]] || fail "the job exited with code 0 after SIG$signal of rank $rank"
if [[ -n $expect ]] && ! grep -Eq "$expect" "$log"; then fail "the output lacks: $expect"; fi
left=""
for f in "$dir"/rank*.pid; do
  p=$(<"$f")
  if kill -0 "$p" 2>/dev/null && [[ $(ps -o stat= -p "$p" 2>/dev/null) != Z* ]]; then left+=" $p"; fi
done
[[ -z $left ]] || fail "ranks still running after the launcher exited:$left"
echo "PASS: ended within $took s (bound $within s)"
