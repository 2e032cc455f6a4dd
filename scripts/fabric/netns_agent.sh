#!/usr/bin/env bash
# Open MPI's remote-launch agent for the emulated fabric of scripts/fabric/emulate.sh, in place of
# ssh (--mca plm_rsh_agent): called as `netns_agent.sh [ssh-style flags] ADDRESS COMMAND...`, it
# runs COMMAND (one shell command line, as ssh would) on the emulated host that owns ADDRESS:
# inside that host's network namespace, with the host's name as hostname (own UTS namespace) and
# a clean environment like an ssh login's, so only what mpirun forwards (-x) reaches the ranks.
#
# The address -> namespace map is HPF_FABRIC_HOSTS (lines "ADDRESS NAMESPACE", written by
# `emulate.sh up`; mpirun passes it down), else every /run/hpf-fabric/*/hosts. Fails with 255, as
# ssh does, for an address that no emulated host has.
set -euo pipefail

while [ $# -gt 0 ]; do  # ssh flags a launcher may add (-x no X11, -T no tty, -q quiet)
  case "$1" in
    -x|-T|-q|-n) shift ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "netns_agent.sh: usage: netns_agent.sh ADDRESS COMMAND..." >&2; exit 255; }
address=$1
shift

namespace=""
shopt -s nullglob
for map in ${HPF_FABRIC_HOSTS:-} /run/hpf-fabric/*/hosts; do
  [ -f "$map" ] || continue
  namespace=$(awk -v a="$address" '$1 == a { print $2; exit }' "$map")
  [ -z "$namespace" ] || break
done
if [ -z "$namespace" ] || ! ip netns list | awk '{ print $1 }' | grep -Fxq "$namespace"; then
  echo "netns_agent.sh: no emulated host has address '$address'" >&2
  exit 255
fi

# shellcheck disable=SC2016  # expanded by the inner bash
exec ip netns exec "$namespace" unshare --uts \
  env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="${HOME:-/root}" \
  LANG=C.UTF-8 USER="$(id -un)" LOGNAME="$(id -un)" SHELL=/bin/bash \
  bash -c 'echo "$0" > /proc/sys/kernel/hostname && exec bash -c "$1"' "$namespace" "$*"
