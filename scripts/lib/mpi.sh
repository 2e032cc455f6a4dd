# Which MPI a launcher belongs to, and the exact command that starts N ranks of a program with it.
# Sourced by scripts/quickstart.sh and scripts/launch.sh (bash); tests/scripts/test_launch.sh checks
# it against fake launchers that print what Open MPI 4 and 5, PRRTE, MPICH, Intel MPI and Slurm print.
#
# Families and what each needs on one machine:
#   openmpi  Open MPI 4.x (OpenRTE) and 5.x (PRRTE): refuses root without --allow-run-as-root, and
#            more ranks than cores without --oversubscribe (4.x) or --map-by :OVERSUBSCRIBE (5.x)
#   mpich    MPICH, MVAPICH and other Hydra launchers: no flags
#   intel    Intel MPI (Hydra): no flags
#   slurm    srun inside an allocation: ranks come from the allocation, no flags
#   unknown  launched with no flags, and said so

# hpf_mpi_identify PROGRAM: prints "FAMILY MAJOR" (MAJOR 0 when unknown) for an MPI launcher or
# compiler wrapper. Two independent signals: what the program says about itself and the name it
# resolves to (Debian's alternatives lead mpiexec to orterun, prterun or mpiexec.hydra). What it
# says wins; the name decides when it says nothing recognisable.
hpf_mpi_identify() {
  local program=$1 text="" probe resolved family=unknown major=0
  # Launchers answer --version; Open MPI's wrappers --showme:version, MPICH's and Intel's -v.
  for probe in --version --showme:version -v; do
    text+=$(timeout 20 "$program" "$probe" 2>&1 </dev/null)$'\n' || true
    case "$text" in
      *OpenRTE*|*"Open MPI"*|*PRRTE*|*prterun*) family=openmpi ;;
      *"Intel(R) MPI"*)                         family=intel ;;
      *HYDRA*|*MPICH*|*MVAPICH*)                family=mpich ;;
      *slurm*|*SLURM*)                          family=slurm ;;
    esac
    [ "$family" = unknown ] || break
  done
  if [ "$family" = unknown ]; then
    resolved=$(readlink -f "$(command -v "$program" || echo "$program")")
    case "${resolved##*/}" in
      orterun*|*.openmpi) family=openmpi; major=4 ;;
      prterun*|prte*)     family=openmpi; major=5 ;;
      *hydra*|*.mpich)    family=mpich ;;
      srun)               family=slurm ;;
    esac
  fi
  if [ "$family" = openmpi ] && [ "$major" = 0 ]; then
    # "mpiexec (OpenRTE) 4.1.4", "mpirun (Open MPI) 5.0.3", "mpicxx: Open MPI 4.1.4 (...)";
    # PRRTE's own launcher ("prterun (PRRTE) 3.0.5") is the 5.x generation.
    major=$(printf '%s\n' "$text" | sed -nE 's/.*(OpenRTE|Open MPI)\)?:? ([0-9]+)\..*/\2/p' | head -n 1)
    case "$text" in *PRRTE*|*prterun*) [ -n "$major" ] || major=5 ;; esac
    [ -n "$major" ] || major=0
  fi
  echo "$family $major"
}

# hpf_mpi_local_slots: how many ranks Open MPI maps onto this machine without oversubscribing: one
# per core (not per hardware thread) among the CPUs this process may run on.
hpf_mpi_local_slots() {
  local cpus threads
  cpus=$(nproc)
  threads=$(LC_ALL=C lscpu 2>/dev/null | sed -nE 's/^Thread\(s\) per core: *([0-9]+).*/\1/p')
  [ -n "$threads" ] && [ "$threads" -gt 0 ] || threads=1
  echo $(( cpus / threads > 0 ? cpus / threads : 1 ))
}

# hpf_mpi_default_launcher: srun inside a Slurm allocation, otherwise mpiexec on PATH; HPF_MPIEXEC
# overrides both.
hpf_mpi_default_launcher() {
  if [ -n "${HPF_MPIEXEC:-}" ]; then
    echo "$HPF_MPIEXEC"
  elif [ -n "${SLURM_JOB_ID:-${SLURM_JOBID:-}}" ] && command -v srun >/dev/null; then
    echo srun
  else
    echo mpiexec
  fi
}

# hpf_mpi_launch_command LAUNCHER RANKS PROGRAM [ARGS...]: sets the array HPF_LAUNCH to the command
# that starts RANKS ranks of PROGRAM with LAUNCHER, with root and oversubscription permission only
# where this MPI needs them. HPF_MPI_UID and HPF_MPI_SLOTS override the user id and core count
# (for tests).
hpf_mpi_launch_command() {
  local launcher=$1 ranks=$2 family major uid slots
  shift 2
  read -r family major < <(hpf_mpi_identify "$launcher")
  uid=${HPF_MPI_UID:-$(id -u)}
  slots=${HPF_MPI_SLOTS:-$(hpf_mpi_local_slots)}
  HPF_LAUNCH=("$launcher")
  case "$family" in
    openmpi)
      [ "$uid" -ne 0 ] || HPF_LAUNCH+=(--allow-run-as-root)
      if [ "$ranks" -gt "$slots" ] && [ -z "${SLURM_JOB_ID:-${SLURM_JOBID:-}}" ]; then
        if [ "$major" -ge 5 ]; then HPF_LAUNCH+=(--map-by :OVERSUBSCRIBE); else HPF_LAUNCH+=(--oversubscribe); fi
      fi ;;
    unknown)
      echo "hpf: cannot tell which MPI '$launcher' belongs to; starting it with no extra flags" >&2 ;;
  esac
  HPF_LAUNCH+=(-n "$ranks" "$@")
}

# hpf_mpi_compiler_for LAUNCHER FAMILY: prints the C++ compiler wrapper of LAUNCHER's MPI (FAMILY,
# from hpf_mpi_identify) so a build and its launch never mix two MPIs, or fails. Looks next to the
# launcher under the names Debian's alternatives use (mpicxx.openmpi, mpicxx.mpich), then plain
# mpicxx there and on PATH. srun starts any MPI: under it the build takes mpicxx on PATH (the one
# the loaded module provides).
hpf_mpi_compiler_for() {
  local launcher=$1 family=$2 path dir resolved_dir candidate candidate_family
  if [ "$family" = slurm ]; then command -v mpicxx; return; fi
  path=$(command -v "$launcher") || return 1
  dir=$(dirname "$path")
  resolved_dir=$(dirname "$(readlink -f "$path")")
  for candidate in "$dir/mpicxx.$family" "$resolved_dir/mpicxx.$family" "$resolved_dir/mpicxx" "$dir/mpicxx" \
                   "$(command -v mpicxx || true)"; do
    [ -x "$candidate" ] || continue
    read -r candidate_family _ < <(hpf_mpi_identify "$candidate")
    if [ "$candidate_family" = "$family" ]; then echo "$candidate"; return 0; fi
  done
  return 1
}

# hpf_mpi_note_localhost: a note on stderr where 'localhost' does not resolve (a chroot or a
# container without /etc/hosts). There most of Open MPI 4's launches wait 5 s: CI's fresh roots ran
# the test suite in 1062 s instead of 558 s until they got a Debian /etc/hosts.
hpf_mpi_note_localhost() {
  command -v getent >/dev/null || return 0
  getent hosts localhost >/dev/null 2>&1 && return 0
  echo "== note: 'localhost' does not resolve here, so mpiexec launches may wait 5 s each;" \
       "a Debian machine's /etc/hosts has the line '127.0.0.1 localhost'" >&2
}
