#!/usr/bin/env bash
# Start an MPI program on this machine or inside a Slurm allocation, with the flags its MPI needs:
#
#   scripts/launch.sh [--dry-run] [--launcher PROG] -n RANKS PROGRAM [ARGS...]
#   scripts/launch.sh --identify [--launcher PROG]          prints "FAMILY MAJOR" of the launcher
#   scripts/launch.sh --preflags [--launcher PROG] -n RANKS prints the flags it adds, one a line
#
# The launcher is srun inside a Slurm allocation, otherwise mpiexec on PATH (HPF_MPIEXEC or
# --launcher override). Open MPI gets --allow-run-as-root only as root and --oversubscribe
# (4.x) or --map-by :OVERSUBSCRIBE (5.x) only for more ranks than cores; MPICH, Intel MPI and
# srun need nothing. The command is printed before it runs, so it can be copied.
set -euo pipefail
# shellcheck source=lib/mpi.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/mpi.sh"

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; }
fail() { echo "launch.sh: $*" >&2; echo "usage: $0 [--dry-run] [--launcher PROG] -n RANKS PROGRAM [ARGS...] (--help)" >&2; exit 2; }

action=run launcher="" ranks=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help)  usage; exit 0 ;;
    --dry-run)  action=print; shift ;;
    --identify) action=identify; shift ;;
    --preflags) action=preflags; shift ;;
    --launcher) [ $# -ge 2 ] || fail "--launcher needs a program"; launcher=$2; shift 2 ;;
    -n|-np)     [ $# -ge 2 ] || fail "$1 needs a rank count"; ranks=$2; shift 2 ;;
    --)         shift; break ;;
    -*)         fail "unknown option '$1'" ;;
    *)          break ;;
  esac
done
[ -n "$launcher" ] || launcher=$(hpf_mpi_default_launcher)
command -v "$launcher" >/dev/null || fail "no MPI launcher '$launcher' (install one, or name it with --launcher or HPF_MPIEXEC)"

if [ "$action" = identify ]; then
  hpf_mpi_identify "$launcher"
  exit 0
fi
[[ "$ranks" =~ ^[1-9][0-9]*$ ]] || fail "-n needs a positive rank count, got '${ranks}'"
if [ "$action" = preflags ]; then
  hpf_mpi_launch_command "$launcher" "$ranks"
  # HPF_LAUNCH is: launcher, flags..., -n, ranks
  for flag in "${HPF_LAUNCH[@]:1:${#HPF_LAUNCH[@]}-3}"; do echo "$flag"; done
  exit 0
fi
[ $# -gt 0 ] || fail "no program to launch"
hpf_mpi_launch_command "$launcher" "$ranks" "$@"
echo "== launching: $(printf '%q ' "${HPF_LAUNCH[@]}")"
[ "$action" = run ] || exit 0
exec "${HPF_LAUNCH[@]}"
