#!/usr/bin/env bash
# scripts/fabric/emulate.sh for real, as root (about a minute): hosts as network namespaces reach
# each other, their links carry the requested tbf rate in both directions and achieve it, Open MPI
# runs one rank per host over TCP (btl tcp, distinct hostnames, no shared memory), and nothing is
# left behind: after `down`, after a successful `run`, after a `run` whose program fails (which
# must fail too), after a `run` stopped by SIGTERM, and (through `down`) after one killed by
# SIGKILL. "Nothing" means: no namespace of the test's prefix, no state directory, no process in
# the namespaces the runs made, and the links, addresses and qdiscs of the calling namespace
# unchanged. Fails, never skips, when it cannot run: not root, no network namespaces, no Open MPI.
#
#   bash tests/fabric/test_emulate.sh          (or: scripts/fabric/emulate.sh selftest)
#
# Uses its own prefix and subnet (HPF_FABRIC_PREFIX=hpft, HPF_FABRIC_NET=10.77.9.0/24), so a
# fabric someone keeps up with the defaults is not touched.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
emulate=$here/../../scripts/fabric/emulate.sh
export HPF_FABRIC_PREFIX=hpft HPF_FABRIC_NET=10.77.9.0/24 HPF_FABRIC_TIMEOUT=120
unset HPF_FABRIC_MPIEXEC_ARGS
work=$(mktemp -d)
passed=0 failed=0

finish() {
  timeout 60 bash "$emulate" down >/dev/null 2>&1
  ip netns del hpftprobe 2>/dev/null
  rm -rf "$work"
}
trap finish EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

ok() { passed=$((passed + 1)); echo "ok: $1"; }
bad() { failed=$((failed + 1)); printf 'FAILED: %s\n' "$1"; [ -z "${2:-}" ] || printf '%s\n' "$2" | sed 's/^/  | /' | tail -n 30; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "expected: $2"$'\n'"actual:   $3"; fi; }
fabric() { timeout 150 bash "$emulate" "$@"; }

# --- preconditions: a failure here fails the test ----------------------------------------------
[ "$(id -u)" -eq 0 ] || { echo "FAILED: must run as root (network namespaces, veth, tc)"; exit 1; }
for tool in ip tc unshare timeout python3 mpirun.openmpi mpicc.openmpi; do
  command -v "$tool" >/dev/null || { echo "FAILED: '$tool' is missing"; exit 1; }
done
if ! ip netns add hpftprobe 2>"$work/err" || ! ip netns del hpftprobe 2>>"$work/err"; then
  echo "FAILED: cannot make network namespaces: $(cat "$work/err")"
  exit 1
fi
if ip netns list | grep -qE '^hpft([0-9]+|sw)( |$)'; then
  echo "FAILED: namespaces with the test's prefix hpft exist already; remove them with" \
       "HPF_FABRIC_PREFIX=hpft $emulate down"
  exit 1
fi

cat > "$work/hello.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, len = 0;
  char name[MPI_MAX_PROCESSOR_NAME];
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Get_processor_name(name, &len);
  /* processes on this rank's node as MPI sees it (hpf pieces gradient buckets between nodes) */
  MPI_Comm node;
  int on_node = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &on_node);
  MPI_Comm_free(&node);
  static double x[1 << 18];  /* 2 MiB: more than an eager message */
  for (int i = 0; i < (1 << 18); ++i) x[i] = rank + 1;
  MPI_Allreduce(MPI_IN_PLACE, x, 1 << 18, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const int good = x[0] == size * (size + 1) / 2.0 && x[(1 << 18) - 1] == x[0];
  printf("hello rank %d of %d on %s node of %d allreduce %s\n", rank, size, name, on_node, good ? "ok" : "WRONG");
  MPI_Finalize();
  return good ? 0 : 1;
}
EOF
mpicc.openmpi -O1 -o "$work/hello" "$work/hello.c" || { echo "FAILED: cannot compile an MPI program"; exit 1; }

# What must not change in the calling namespace, and what must be gone after each run.
snapshot() {
  ip -o link show | sed -E 's/^[0-9]+: ([^:@]+).*/\1/' | sort
  ip -o addr show | awk '{ print $2, $3, $4 }' | sort
  tc qdisc show | sort
  echo "tcp_autocorking $(cat /proc/sys/net/ipv4/tcp_autocorking)"
}
snapshot > "$work/before"
# inodes of the network namespaces of the current fabric (to look for processes after it is gone)
record_namespaces() {
  local ns
  for ns in $(ip netns list | awk '{ print $1 }' | grep -E '^hpft([0-9]+|sw)$'); do
    stat -L -c %i "/run/netns/$ns"
  done >> "$work/inodes"
}
processes_in_recorded_namespaces() {
  local link pid inode
  [ -s "$work/inodes" ] || return 0
  for link in /proc/[0-9]*/ns/net; do
    inode=$(stat -L -c %i "$link" 2>/dev/null) || continue
    if grep -qx "$inode" "$work/inodes"; then pid=${link#/proc/}; echo "${pid%%/*} $(tr '\0' ' ' < "/proc/${pid%%/*}/cmdline" 2>/dev/null)"; fi
  done
}
# nothing_left WHAT: checks that the fabric is gone without a trace.
nothing_left() {
  local what=$1 left
  left=$(ip netns list | awk '{ print $1 }' | grep -E '^hpft([0-9]+|sw)$' | tr '\n' ' ')
  check "$what: no namespaces left" "" "$left"
  check "$what: no state directory left" "absent" "$([ -e /run/hpf-fabric/hpft ] && echo present || echo absent)"
  sleep 0.5
  check "$what: no process left in the fabric's namespaces" "" "$(processes_in_recorded_namespaces)"
  snapshot > "$work/after"
  check "$what: calling namespace unchanged" "" "$(diff "$work/before" "$work/after")"
  : > "$work/inodes"
}

# --- up: hosts, shaping, connectivity, Open MPI over TCP -------------------------------------------
if fabric up 3 1gbit > "$work/out" 2>&1; then ok "up 3 1gbit"; else bad "up 3 1gbit" "$(cat "$work/out")"; fi
record_namespaces
check "three hosts and a switch" "hpft0 hpft1 hpft2 hpftsw" \
  "$(ip netns list | awk '{ print $1 }' | grep -E '^hpft([0-9]+|sw)$' | sort | tr '\n' ' ' | sed 's/ $//')"
for i in 0 1 2; do
  check "host hpft$i: address" "10.77.9.$((i + 1))/24" \
    "$(ip -n "hpft$i" -o -4 addr show dev eth0 | awk '{ print $4 }')"
  check "host hpft$i: loopback up" "yes" "$(ip -n "hpft$i" link show lo | grep -q 'UP' && echo yes || echo no)"
  check "host hpft$i: TCP autocorking off" "0" "$(ip netns exec "hpft$i" cat /proc/sys/net/ipv4/tcp_autocorking)"
  check "host hpft$i: to-switch qdisc" "tbf 1Gbit" \
    "$(tc -n "hpft$i" qdisc show dev eth0 | sed -nE 's/^qdisc (tbf) .* rate ([^ ]+) .*/\1 \2/p')"
  check "switch port$i: to-host qdisc" "tbf 1Gbit" \
    "$(tc -n hpftsw qdisc show dev "port$i" | sed -nE 's/^qdisc (tbf) .* rate ([^ ]+) .*/\1 \2/p')"
done
check "nothing of the fabric in the calling namespace" "" "$(snapshot | diff "$work/before" -)"

out=$(fabric mpiexec -n 3 hostname 2>&1)
check "mpiexec -n 3 hostname: one rank per host" "hpft0 hpft1 hpft2" \
  "$(printf '%s\n' "$out" | grep -E '^hpft[0-9]+$' | sort | tr '\n' ' ' | sed 's/ $//')"

out=$(fabric check 2 2>&1)
rate=$(printf '%s\n' "$out" | sed -n 's/.*achieved_gbit_per_s=\([0-9.]*\).*/\1/p')
if [ -n "$rate" ] && awk -v r="$rate" 'BEGIN { exit !(r > 0.5 && r <= 1.0) }'; then
  ok "1gbit link carries $rate Gbit/s of TCP (expected 0.5-1.0)"
else
  bad "1gbit link: achieved rate '$rate' not in 0.5-1.0 Gbit/s" "$out"
fi

out=$(HPF_FABRIC_MPIEXEC_ARGS="--mca btl_base_verbose 100" fabric mpiexec -n 3 "$work/hello" 2>&1)
check "tiny MPI program: every rank on its own host and node, allreduce right" \
  "hello rank 0 of 3 on hpft0 node of 1 allreduce ok|hello rank 1 of 3 on hpft1 node of 1 allreduce ok|hello rank 2 of 3 on hpft2 node of 1 allreduce ok" \
  "$(printf '%s\n' "$out" | grep '^hello' | sort | tr '\n' '|' | sed 's/|$//')"
# Connections open lazily: at least the pairs the allreduce uses, and every one to a fabric address.
tcp_links=$(printf '%s\n' "$out" | grep -cE 'btl:tcp: now connected to 10\.77\.9\.[0-9]+, process')
if [ "$tcp_links" -ge 2 ]; then ok "ranks talk over btl tcp between the hosts' addresses ($tcp_links connections)"; else
  bad "ranks talk over btl tcp between the hosts' addresses ($tcp_links connections, expected 2 or more)" "$out"; fi
check "no btl tcp connection to another address" "" \
  "$(printf '%s\n' "$out" | grep -E 'connect\(\) to|now connected to' | grep -vE '10\.77\.9\.[0-9]+' || true)"
check "no shared-memory btl selected" "0" "$(printf '%s\n' "$out" | grep -ciE 'using (vader|sm) btl')"

# a process still running in a host (as after a crash) does not keep the fabric alive
ip netns exec hpft1 sleep 311 &
sleep 0.3
if fabric down > "$work/out" 2>&1; then ok "down"; else bad "down" "$(cat "$work/out")"; fi
wait 2>/dev/null
nothing_left "down"

# --- run: success, failure, bad arguments ----------------------------------------------------------
HPF_FABRIC_MPIEXEC_ARGS="" fabric run 2 unshaped -- "$work/hello" > "$work/out" 2>&1 & runner=$!
sleep 1.5; record_namespaces
wait "$runner"; rc=$?
check "run 2 unshaped -- hello: exit status" "0" "$rc"
check "run 2 unshaped -- hello: two ranks ran" "2" "$(grep -c 'allreduce ok' "$work/out")"
nothing_left "successful run"

fabric run 2 1gbit -- false > "$work/out" 2>&1 & runner=$!
sleep 1.5; record_namespaces
wait "$runner"; rc=$?
if [ "$rc" -ne 0 ]; then ok "run -- false fails (exit $rc)"; else bad "run -- false exited 0"; fi
nothing_left "failed run"

# shellcheck disable=SC2016  # expanded by the inner sh, where `with` sets it
out=$(fabric with 2 unshaped -- sh -c '"$HPF_FABRIC_MPIEXEC" -n 2 hostname' 2>&1)
check "with 2 unshaped: HPF_FABRIC_MPIEXEC launches on the hosts" "hpft0 hpft1" \
  "$(printf '%s\n' "$out" | grep -E '^hpft[0-9]+$' | sort | tr '\n' ' ' | sed 's/ $//')"
nothing_left "with"

fabric run 2 fastest -- true > "$work/out" 2>&1; rc=$?
check "run with an unknown rate: usage error" "2" "$rc"
bash "$emulate" up 2 1gbit > /dev/null 2>&1
fabric up 2 1gbit > "$work/out" 2>&1; rc=$?
check "up over an existing fabric: refused" "2" "$rc"
check "up over an existing fabric: the existing one is kept" "hpft0 hpft1 hpftsw" \
  "$(ip netns list | awk '{ print $1 }' | grep -E '^hpft([0-9]+|sw)$' | sort | tr '\n' ' ' | sed 's/ $//')"
record_namespaces
fabric down > /dev/null 2>&1
nothing_left "refused up"

# --- signals --------------------------------------------------------------------------------------
# wait_for_ranks NS: until a `sleep 31x` rank runs in host NS (20 s at most).
wait_for_ranks() {
  local t pid
  for ((t = 0; t < 200; t++)); do
    for pid in $(ip netns pids "$1" 2>/dev/null); do
      grep -q '^sleep' "/proc/$pid/cmdline" 2>/dev/null && return 0
    done
    sleep 0.1
  done
  return 1
}
# The runner gets SIGINT's default action, as under a terminal: a background job of a shell without
# job control starts with SIGINT ignored, and so does all that runs below one (`nohup ... &`, some
# CI harnesses), where no trap can catch it (bash: ignored on entry).
for signal in TERM INT; do
  env --default-signal=INT bash "$emulate" run 3 10gbit -- sleep 312 > "$work/out" 2>&1 & runner=$!
  if wait_for_ranks hpft2; then ok "SIG$signal test: ranks are running on the hosts"; else
    bad "SIG$signal test: ranks did not start" "$(cat "$work/out")"; fi
  record_namespaces
  kill -"$signal" "$runner"
  for ((t = 0; t < 300; t++)); do kill -0 "$runner" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$runner" 2>/dev/null; then bad "SIG$signal: still running 30 s later"; kill -KILL "$runner"; fi
  wait "$runner"; rc=$?
  check "SIG$signal mid-run: exit status" "$([ "$signal" = TERM ] && echo 143 || echo 130)" "$rc"
  nothing_left "SIG$signal mid-run"
done

# SIGKILL leaves everything behind (no trap can run); `down` then removes it, ranks included.
bash "$emulate" run 2 1gbit -- sleep 313 > "$work/out" 2>&1 & runner=$!
wait_for_ranks hpft1 || bad "SIGKILL test: ranks did not start" "$(cat "$work/out")"
record_namespaces
kill -KILL "$runner"; wait "$runner" 2>/dev/null
check "after SIGKILL the fabric is still there" "hpft0 hpft1 hpftsw" \
  "$(ip netns list | awk '{ print $1 }' | grep -E '^hpft([0-9]+|sw)$' | sort | tr '\n' ' ' | sed 's/ $//')"
fabric down > /dev/null 2>&1
nothing_left "SIGKILL, then down"

echo "== fabric test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
