#!/usr/bin/env bash
# Emulated multi-host fabrics on one machine: N hosts as network namespaces on one switch, each
# host's link shaped to a rate, and Open MPI launched across them over TCP exactly as on a cluster
# (a hostfile of the hosts' addresses, HPF_FABRIC_SLOTS ranks per host, a remote-launch agent).
# As root:
#
#   scripts/fabric/emulate.sh up N RATE          make N hosts on a switch, links shaped to RATE
#   scripts/fabric/emulate.sh mpiexec ARGS...    mpirun on the fabric that is up, from host 0,
#                                                e.g. `mpiexec -n 4 build/benchmarks/hpf_bench_...`
#   scripts/fabric/emulate.sh exec I -- COMMAND...  COMMAND in host I of the fabric that is up (a
#                                                program that is not launched by MPI, e.g. one
#                                                PyTorch process per host), bounded in time
#   scripts/fabric/emulate.sh check [SECONDS]    achieved TCP rate host 0 -> host 1 (default 2 s)
#   scripts/fabric/emulate.sh status             the fabric's hosts, addresses and qdiscs
#   scripts/fabric/emulate.sh down               remove the fabric, also what a crashed run left
#   scripts/fabric/emulate.sh run N RATE [--mpiexec-args "ARGS"] -- PROGRAM [ARGS...]
#                                                up, PROGRAM as N x HPF_FABRIC_SLOTS ranks, down
#   scripts/fabric/emulate.sh with N RATE -- COMMAND...
#                                                up, COMMAND in this shell's namespace with
#                                                HPF_FABRIC_MPIEXEC (a launcher taking mpiexec's
#                                                arguments) in its environment, down
#   scripts/fabric/emulate.sh selftest           tests/fabric/test_emulate.sh (as root)
#
# RATE: a tc rate (1gbit, 10gbit, 25gbit, 500mbit, ...) or `unshaped` (veth speed: no qdisc).
# `run` and `with` exit with the status of what they ran, and remove the fabric on every exit:
# success, failure, Ctrl-C or SIGTERM. Every launch is bounded by HPF_FABRIC_TIMEOUT.
#
# Layout (nothing is made in the namespace this script is called from):
#   namespace PREFIXsw  the switch: bridge br0 (no address), ports port0..port(N-1)
#   namespace PREFIXi   host i: eth0 (veth to portI) with address NET.(i+1)/24, lo up; processes
#                       started there get hostname PREFIXi (own UTS namespace)
#   Shaping: tc tbf on both directions of every link, the egress of the host's eth0 (host to switch)
#   and of the switch's portI (switch to host), like a non-blocking switch with RATE per port.
#   burst = RATE x HPF_FABRIC_BURST_MS (default 1 ms: 125 kB at 1 Gbit/s, 3.1 MB at 25 Gbit/s;
#   at least 10 MTU): a smaller bucket than the kernel's timer jitter on a loaded machine would
#   cap the rate below RATE. Queue: HPF_FABRIC_QUEUE_MS (default 10 ms) at RATE before drops.
#   Latency is the veth's (microseconds): no delay is added (sch_netem is not needed). TCP's
#   autocorking is off in the hosts (no_autocork says why).
#   Open MPI: the hostfile lists NET.1..NET.N with slots=HPF_FABRIC_SLOTS; mpirun runs in host 0
#   and starts the other hosts' daemons through scripts/fabric/netns_agent.sh (in place of ssh:
#   address -> namespace, clean environment, own hostname); pml ob1, btl tcp,self (and vader, the
#   shared memory of ranks on one host, with several slots) and both TCP interfaces restricted to
#   NET.0/24, so no two hosts' ranks use shared memory or another interface; IPv6 is off
#   in every namespace. --bind-to none and mpi_yield_when_idle 1: the hosts share this machine's
#   cores, so a waiting rank should not spin on a core another host's rank computes on
#   (HPF_FABRIC_YIELD=0 turns this off). Forwarded with -x: OMP_NUM_THREADS, OPENBLAS_NUM_THREADS,
#   MKL_NUM_THREADS (1 unless set), OPENBLAS_CORETYPE, LD_LIBRARY_PATH, and every HPF_* and
#   KOKKOS_* variable that is set (HPF_TRACE, HPF_FASHION_MNIST_DIR, ...).
#
# Environment:
#   HPF_FABRIC_PREFIX     namespace prefix, letters/digits ending in a letter (default hpfh);
#                         `down` removes exactly PREFIXsw and PREFIX<number>, nothing else
#   HPF_FABRIC_NET        the hosts' /24 (default 10.77.0.0/24)
#   HPF_FABRIC_TIMEOUT    seconds any launch or `run`/`with` may take (default 900)
#   HPF_FABRIC_SLOTS      ranks per host (default 1); mpirun fills host 0 first (--map-by slot)
#   HPF_FABRIC_MPIRUN     Open MPI's launcher (default mpirun.openmpi, else mpirun)
#   HPF_FABRIC_MPIEXEC_ARGS  extra mpirun arguments for every launch (e.g. "--mca btl_base_verbose 30")
#   HPF_FABRIC_YIELD      0: ranks poll while they wait, as Open MPI does on a real cluster
#   HPF_FABRIC_BURST_MS, HPF_FABRIC_QUEUE_MS, HPF_FABRIC_MTU (default 1500)
#   HPF_FABRIC_STATE      where hostfiles and the launcher live (default /run/hpf-fabric)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

prefix=${HPF_FABRIC_PREFIX:-hpfh}
net_cidr=${HPF_FABRIC_NET:-10.77.0.0/24}
limit_s=${HPF_FABRIC_TIMEOUT:-900}
burst_ms=${HPF_FABRIC_BURST_MS:-1}
queue_ms=${HPF_FABRIC_QUEUE_MS:-10}
mtu=${HPF_FABRIC_MTU:-1500}
slots=${HPF_FABRIC_SLOTS:-1}
state_root=${HPF_FABRIC_STATE:-/run/hpf-fabric}
state=$state_root/$prefix
switch=${prefix}sw

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; }
say() { echo "== fabric: $*" >&2; }
fail() { echo "emulate.sh: $*" >&2; exit 2; }

[[ "$prefix" =~ ^[a-z][a-z0-9]{0,9}[a-z]$ ]] ||
  fail "HPF_FABRIC_PREFIX must be 2-11 lower-case letters/digits ending in a letter, got '$prefix'"
[[ "$net_cidr" =~ ^([0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3})\.0/24$ ]] ||
  fail "HPF_FABRIC_NET must be a /24 such as 10.77.0.0/24, got '$net_cidr'"
net=${BASH_REMATCH[1]}
for setting in HPF_FABRIC_TIMEOUT=$limit_s HPF_FABRIC_SLOTS=$slots HPF_FABRIC_BURST_MS=$burst_ms HPF_FABRIC_QUEUE_MS=$queue_ms HPF_FABRIC_MTU=$mtu; do
  [[ "${setting#*=}" =~ ^[1-9][0-9]*$ ]] || fail "${setting%%=*} must be a positive whole number, got '${setting#*=}'"
done

need_root() {
  [ "$(id -u)" -eq 0 ] || fail "needs root (network namespaces, veth, tc): run it with sudo"
  if ! command -v ip >/dev/null || ! command -v tc >/dev/null; then fail "needs ip and tc (Debian: iproute2)"; fi
}

# The namespaces this prefix names (made by this script), switch last.
our_namespaces() {
  ip netns list 2>/dev/null | awk '{ print $1 }' | grep -E "^${prefix}[0-9]+$" | sort -V || true
  ip netns list 2>/dev/null | awk '{ print $1 }' | grep -Fx "$switch" || true
}

# rate_bytes RATE: bytes per second of a tc rate such as 1gbit, 500mbit, 25gbit.
rate_bytes() {
  local value unit
  [[ "$1" =~ ^([0-9]+(\.[0-9]+)?)(kbit|mbit|gbit)$ ]] || return 1
  value=${BASH_REMATCH[1]} unit=${BASH_REMATCH[3]}
  awk -v v="$value" -v u="$unit" 'BEGIN { m = u == "kbit" ? 1e3 : u == "mbit" ? 1e6 : 1e9; printf "%.0f\n", v * m / 8 }'
}

check_rate() {
  [ "$1" = unshaped ] || rate_bytes "$1" >/dev/null ||
    fail "RATE must be a tc rate such as 1gbit, 10gbit, 25gbit, 500mbit, or 'unshaped'; got '$1'"
}

check_count() {
  if ! [[ "$1" =~ ^[1-9][0-9]*$ ]] || [ "$1" -gt 250 ]; then fail "N must be a host count from 1 to 250, got '$1'"; fi
}

# in_host NS: sets the array in_host to the command prefix that runs a command in host namespace NS
# with hostname NS (own UTS namespace), the way a process on a separate machine sees it.
# netns_agent.sh does the same for the daemons mpirun starts on the other hosts.
in_host() {
  # shellcheck disable=SC2016  # expanded by the inner bash
  in_host=(ip netns exec "$1" unshare --uts bash -c 'echo "$0" > /proc/sys/kernel/hostname && exec "$@"' "$1")
}

# shape NS DEV RATE: tbf at RATE on the egress of DEV in namespace NS.
shape() {
  local ns=$1 dev=$2 rate=$3 bytes burst
  bytes=$(rate_bytes "$rate")
  burst=$(( bytes * burst_ms / 1000 ))
  [ "$burst" -ge $(( 10 * mtu )) ] || burst=$(( 10 * mtu ))
  tc -n "$ns" qdisc add dev "$dev" root tbf rate "$rate" burst "$burst" latency "${queue_ms}ms"
}

# no_autocork NS: TCP in NS sends what the program writes at once. With autocorking on (Linux'
# default), TCP holds a small write while an earlier packet of the socket is still queued below
# it, and here the host's own tbf holds that packet as long as its bucket is empty: the MLP's
# 1F1B on 1 Gbit/s (M = 2, 128 KiB messages in 60 KiB pieces) ran 6.4-9.6 ms per step, traced
# with one gradient arriving 23.5 ms after its send completed, no loss; without it 3.8-4.4 ms (a
# 2 ms burst did the same: 3.5-3.8 ms). A real host's queue drains into its NIC at once.
no_autocork() {
  ip netns exec "$1" sh -c 'echo 0 > /proc/sys/net/ipv4/tcp_autocorking'
}

# no_ipv6 NS: IPv4 only in NS, so the hosts talk over their NET addresses and nothing else (no
# link-local IPv6, router solicitations or multicast listener reports on the fabric).
no_ipv6() {
  ip netns exec "$1" sh -c 'echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 &&
                            echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6'
}

fabric_up() {
  local n=$1 rate=$2 i ns addr
  need_root
  check_count "$n"
  check_rate "$rate"
  if [ -n "$(our_namespaces)" ] || [ -e "$state" ]; then
    fail "a fabric with prefix '$prefix' is already up ($(our_namespaces | tr '\n' ' ')): run '$0 down' first"
  fi
  made=1  # from here on, a failure removes what this call made
  say "making $n hosts ${prefix}0..${prefix}$((n - 1)) on $net_cidr, links $rate"
  mkdir -p "$state"
  : > "$state/hosts"
  : > "$state/hostfile"
  ip netns add "$switch"
  no_ipv6 "$switch"
  ip -n "$switch" link add br0 type bridge
  ip -n "$switch" link set br0 up
  for ((i = 0; i < n; i++)); do
    ns=$prefix$i addr=$net.$((i + 1))
    ip netns add "$ns"
    no_ipv6 "$ns"
    no_autocork "$ns"
    ip -n "$switch" link add "port$i" mtu "$mtu" type veth peer name eth0 mtu "$mtu" netns "$ns"
    ip -n "$switch" link set "port$i" master br0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$addr/24" dev eth0
    ip -n "$ns" link set eth0 up
    if [ "$rate" != unshaped ]; then
      shape "$ns" eth0 "$rate"
      shape "$switch" "port$i" "$rate"
    fi
    echo "$addr $ns" >> "$state/hosts"
    echo "$addr slots=$slots" >> "$state/hostfile"
  done
  echo "$n $rate $net_cidr $slots" > "$state/fabric"
  # A launcher other tools can take as their mpiexec (benchmark runners' --mpiexec).
  cat > "$state/mpiexec" <<EOF
#!/bin/sh
# mpiexec on the emulated fabric '$prefix' ($n hosts, $rate): made by $here/emulate.sh up
HPF_FABRIC_PREFIX='$prefix' HPF_FABRIC_NET='$net_cidr' HPF_FABRIC_STATE='$state_root' exec '$here/emulate.sh' mpiexec "\$@"
EOF
  chmod +x "$state/mpiexec"
  # Wait until every host answers on its address (the bridge forwards after its ports are up).
  for ((i = 1; i < n; i++)); do
    wait_reachable "$net.$((i + 1))"
  done
}

# wait_reachable ADDRESS: waits (10 s at most) until host 0 resolves ADDRESS's link address.
wait_reachable() {
  local t
  for ((t = 0; t < 100; t++)); do
    ip netns exec "${prefix}0" bash -c "exec 3<>/dev/tcp/$1/9 2>/dev/null" 2>/dev/null || true  # any packet: refused is fine
    if ip -n "${prefix}0" neigh show "$1" | grep -qE 'REACHABLE|STALE|DELAY'; then return 0; fi
    sleep 0.1
  done
  fail "host $1 is unreachable from ${prefix}0 after 10 s"
}

fabric_down() {
  local namespaces ns pids t
  namespaces=$(our_namespaces)
  # Namespaces live on while a process is inside: end ours (everything in them was started here).
  for t in TERM TERM TERM TERM TERM TERM TERM TERM TERM TERM KILL; do
    pids=""
    for ns in $namespaces; do pids+=" $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"; done
    [ -n "${pids// /}" ] || break
    # shellcheck disable=SC2086  # a list of process ids
    kill -"$t" $pids 2>/dev/null || true
    sleep 0.5
  done
  for ns in $namespaces; do
    ip netns del "$ns" 2>/dev/null || say "could not delete namespace $ns"
  done
  rm -rf "$state"
  rmdir "$state_root" 2>/dev/null || true
  [ -z "$namespaces" ] || say "removed $(echo "$namespaces" | tr '\n' ' ')"
}

load_state() {
  [ -f "$state/fabric" ] || fail "no fabric '$prefix' is up ('$0 up N RATE' makes one)"
  read -r fabric_n fabric_rate _ fabric_slots < "$state/fabric"
}

# The mpirun command line of a launch on the fabric that is up, into the array launch.
launch_command() {
  local mpirun v
  mpirun=${HPF_FABRIC_MPIRUN:-$(command -v mpirun.openmpi || command -v mpirun || true)}
  [ -n "$mpirun" ] || fail "no Open MPI launcher (mpirun.openmpi); set HPF_FABRIC_MPIRUN"
  launch=("$mpirun")
  [ "$(id -u)" -ne 0 ] || launch+=(--allow-run-as-root)
  # shellcheck disable=SC2054  # tcp,self is one argument
  launch+=(--hostfile "$state/hostfile" --bind-to none --map-by slot
           --mca plm_rsh_agent "$here/netns_agent.sh" --mca plm_rsh_no_tree_spawn 1
           --mca pml ob1 --mca btl "tcp,self$([ "${fabric_slots:-1}" -eq 1 ] || echo ,vader)"
           --mca btl_tcp_if_include "$net_cidr" --mca oob_tcp_if_include "$net_cidr")
  # The emulated hosts share this machine's cores: a rank waiting for the network yields its core
  # to the ranks computing (on separate machines its polling would cost the others nothing).
  [ "${HPF_FABRIC_YIELD:-1}" = 0 ] || launch+=(--mca mpi_yield_when_idle 1)
  for v in OMP_NUM_THREADS OPENBLAS_NUM_THREADS MKL_NUM_THREADS; do
    launch+=(-x "$v=${!v:-1}")
  done
  for v in OPENBLAS_CORETYPE LD_LIBRARY_PATH $(compgen -e | grep -E '^(HPF|KOKKOS)_' | grep -v '^HPF_FABRIC_' || true); do
    [ -z "${!v+set}" ] || launch+=(-x "$v")
  done
  # shellcheck disable=SC2206  # extra arguments, split like a command line
  [ -z "${HPF_FABRIC_MPIEXEC_ARGS:-}" ] || launch+=(${HPF_FABRIC_MPIEXEC_ARGS})
}

# fabric_mpiexec ARGS...: mpirun ARGS on the fabric, from host 0, bounded in time.
fabric_mpiexec() {
  need_root
  load_state
  launch_command
  say "launching on ${prefix}0 ($fabric_n hosts x ${fabric_slots:-1} slots, $fabric_rate): $(printf '%q ' "${launch[@]}" "$@")"
  in_host "${prefix}0"
  HPF_FABRIC_HOSTS=$state/hosts timeout --kill-after=15 "$limit_s" "${in_host[@]}" "${launch[@]}" "$@"
}

# The fabric of `run`/`with` goes on every exit (of `up`: on failure), but only one this call made;
# a signal first ends what runs on it.
child="" made=0
on_exit() {
  local rc=$? keep=${1:-no}
  trap - EXIT
  trap '' INT TERM  # the cleanup itself is not interrupted (after SIGKILL, `down` removes leftovers)
  if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null || true; fi
  if [ "$made" = 1 ] && { [ "$keep" = no ] || [ "$rc" -ne 0 ]; }; then fabric_down; fi
  exit "$rc"
}
on_signal() {
  say "interrupted by SIG$1: removing the fabric"
  case "$1" in INT) exit 130 ;; *) exit 143 ;; esac
}

# run_bounded COMMAND...: COMMAND in the background (so a signal reaches the traps at once), bounded
# by HPF_FABRIC_TIMEOUT; returns its status.
run_bounded() {
  local rc=0
  timeout --kill-after=15 "$limit_s" "$@" <&0 &
  child=$!
  wait "$child" || rc=$?
  child=""
  return "$rc"
}

mode=${1:-}
[ $# -eq 0 ] || shift
case "$mode" in
  -h|--help|help) usage; exit 0 ;;
  up)
    [ $# -eq 2 ] || fail "usage: $0 up N RATE"
    trap 'on_exit keep-on-success' EXIT
    trap 'on_signal INT' INT
    trap 'on_signal TERM' TERM
    fabric_up "$1" "$2"
    say "up; launch with: $0 mpiexec -n $1 PROGRAM (or $state/mpiexec); remove with: $0 down"
    ;;
  down)
    need_root
    fabric_down
    ;;
  status)
    need_root
    load_state
    echo "fabric $prefix: $fabric_n hosts, $fabric_rate, $net_cidr, state in $state"
    while read -r addr ns; do
      echo "$ns $addr: $(tc -n "$ns" qdisc show dev eth0 | head -n 1)"
    done < "$state/hosts"
    ;;
  mpiexec)
    fabric_mpiexec "$@"
    ;;
  exec)
    [ $# -ge 2 ] || fail "usage: $0 exec I -- COMMAND..."
    host=$1
    shift
    [ "${1:-}" = -- ] && shift
    [ $# -gt 0 ] || fail "usage: $0 exec I -- COMMAND..."
    need_root
    load_state
    if ! [[ "$host" =~ ^[0-9]+$ ]] || [ "$host" -ge "$fabric_n" ]; then fail "I must be a host from 0 to $((fabric_n - 1)), got '$host'"; fi
    in_host "$prefix$host"
    exec timeout --kill-after=15 "$limit_s" "${in_host[@]}" "$@"
    ;;
  check)
    need_root
    load_state
    [ "$fabric_n" -ge 2 ] || fail "check needs at least 2 hosts"
    seconds=${1:-2}
    in_host "${prefix}1"
    timeout 60 "${in_host[@]}" /usr/bin/python3 "$here/tcp_rate.py" receive 5201 --timeout 20 > "$state/rate" &
    receiver=$!
    in_host "${prefix}0"
    timeout 60 "${in_host[@]}" /usr/bin/python3 "$here/tcp_rate.py" send "$net.2" 5201 --seconds "$seconds" --timeout 20
    wait "$receiver"
    rate=$(sed -n 's/^RESULT .*gbit_per_s=\([0-9.]*\).*/\1/p' "$state/rate")
    echo "RESULT fabric=$fabric_rate achieved_gbit_per_s=$rate"
    ;;
  run|with)
    [ $# -ge 2 ] || fail "usage: $0 $mode N RATE -- COMMAND..."
    n=$1 rate=$2
    shift 2
    extra=""
    if [ "$mode" = run ] && [ "${1:-}" = --mpiexec-args ]; then
      [ $# -ge 2 ] || fail "--mpiexec-args needs a value"
      extra=$2
      shift 2
    fi
    [ "${1:-}" = -- ] && shift
    [ $# -gt 0 ] || fail "usage: $0 $mode N RATE -- COMMAND..."
    need_root
    check_count "$n"
    check_rate "$rate"
    trap on_exit EXIT
    trap 'on_signal INT' INT
    trap 'on_signal TERM' TERM
    fabric_up "$n" "$rate"
    if [ "$mode" = run ]; then
      # shellcheck disable=SC2086  # extra mpirun arguments, split like a command line
      run_bounded "$state/mpiexec" ${extra} -n "$((n * slots))" "$@"
    else
      export HPF_FABRIC_MPIEXEC=$state/mpiexec HPF_FABRIC_HOSTFILE=$state/hostfile
      run_bounded "$@"
    fi
    ;;
  selftest)
    exec bash "$root/tests/fabric/test_emulate.sh"
    ;;
  *)
    echo "usage: $0 up N RATE | down | status | check | mpiexec ARGS | exec I -- COMMAND | run N RATE -- PROGRAM | with N RATE -- COMMAND | selftest  (--help)" >&2
    exit 2
    ;;
esac
