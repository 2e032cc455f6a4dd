#!/usr/bin/env bash
# scripts/launch.sh against fake launchers that answer --version (and run) like Open MPI 4.x
# (OpenRTE) and 5.x, PRRTE, MPICH's Hydra, Intel MPI and Slurm's srun: the family is identified
# by what the launcher says and by the name it resolves to, root and oversubscription flags are
# added only where that MPI needs them, the printed command is the one that runs, and the
# compiler wrapper chosen for a build belongs to the launcher's MPI; and the quick start's note
# where 'localhost' does not resolve (a fake getent).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
launch=$here/../../scripts/launch.sh
fakes=$(mktemp -d)
trap 'rm -rf "$fakes"' EXIT
passed=0 failed=0

# fake DIR NAME VERSION_TEXT [--showme-text TEXT] [--v-text TEXT]: an executable DIR/NAME that
# prints VERSION_TEXT for --version and otherwise "ran: ARGS".
fake() {
  local dir=$fakes/$1 name=$2 version=$3 showme=${4:-} v=${5:-}
  mkdir -p "$dir"
  cat > "$dir/$name" <<EOF
#!/bin/sh
case "\$1" in
  --version) printf '%s\n' "$version"; exit 0 ;;
  --showme:version) [ -n "$showme" ] && { printf '%s\n' "$showme"; exit 0; }; echo "unrecognized option \$1" >&2; exit 1 ;;
  -v) [ -n "$v" ] && { printf '%s\n' "$v"; exit 0; }; echo "unrecognized option \$1" >&2; exit 1 ;;
esac
echo "ran: \$*"
EOF
  chmod +x "$dir/$name"
}
check() {  # check NAME EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAILED: %s\n  expected: %s\n  actual:   %s\n' "$1" "$2" "$3"
  fi
}
preflags() {  # preflags LAUNCHER UID SLOTS RANKS: the flags launch.sh adds, on one line
  HPF_MPI_UID=$2 HPF_MPI_SLOTS=$3 bash "$launch" --preflags --launcher "$1" -n "$4" | tr '\n' ' ' | sed 's/ $//'
}

fake ompi4 mpiexec "mpiexec (OpenRTE) 4.1.4

Report bugs to http://www.open-mpi.org/community/help/"
fake ompi4 mpicxx "g++ (Debian 12.2.0-14) 12.2.0" "mpicxx: Open MPI 4.1.4 (Language: C++)"
fake ompi5 mpiexec "mpiexec (Open MPI) 5.0.3

Report bugs to https://www.open-mpi.org/community/help/"
fake prrte prterun "prterun (PRRTE) 3.0.5"
fake mpich mpiexec.hydra "HYDRA build details:
    Version:                                 4.0.2
    Release Date:                            Thu Apr  7 12:34:45 CDT 2022"
fake mpich mpicxx.mpich "g++ (Debian 12.2.0-14) 12.2.0" "" "mpicxx for MPICH version 4.0.2"
fake mpich mpicxx "g++ (Debian 12.2.0-14) 12.2.0" "mpicxx: Open MPI 4.1.4 (Language: C++)"
ln -s mpiexec.hydra "$fakes/mpich/mpiexec"
fake intel mpiexec "Intel(R) MPI Library for Linux* OS, Version 2021.10 Build 20230619 (id: c2e19c2f3e)
Copyright 2003-2023, Intel Corporation."
fake slurm srun "slurm 22.05.8"
fake silent orterun "usage: see the manual"   # says nothing useful: only its name tells
ln -s orterun "$fakes/silent/mpiexec"
fake other mpiexec "some launcher 1.0"

check "Open MPI 4 identified" "openmpi 4" "$(bash "$launch" --identify --launcher "$fakes/ompi4/mpiexec")"
check "Open MPI 5 identified" "openmpi 5" "$(bash "$launch" --identify --launcher "$fakes/ompi5/mpiexec")"
check "PRRTE identified as the 5.x generation" "openmpi 5" "$(bash "$launch" --identify --launcher "$fakes/prrte/prterun")"
check "MPICH Hydra identified" "mpich 0" "$(bash "$launch" --identify --launcher "$fakes/mpich/mpiexec")"
check "Intel MPI identified" "intel 0" "$(bash "$launch" --identify --launcher "$fakes/intel/mpiexec")"
check "srun identified" "slurm 0" "$(bash "$launch" --identify --launcher "$fakes/slurm/srun")"
check "silent launcher identified by the name it resolves to" "openmpi 4" \
      "$(bash "$launch" --identify --launcher "$fakes/silent/mpiexec")"
check "unknown launcher" "unknown 0" "$(bash "$launch" --identify --launcher "$fakes/other/mpiexec")"

check "Open MPI 4, root, 4 ranks on 2 cores" "--allow-run-as-root --oversubscribe" "$(preflags "$fakes/ompi4/mpiexec" 0 2 4)"
check "Open MPI 4, user, 4 ranks on 2 cores" "--oversubscribe" "$(preflags "$fakes/ompi4/mpiexec" 1000 2 4)"
check "Open MPI 4, user, 4 ranks on 4 cores" "" "$(preflags "$fakes/ompi4/mpiexec" 1000 4 4)"
check "Open MPI 4, root, 2 ranks on 2 cores" "--allow-run-as-root" "$(preflags "$fakes/ompi4/mpiexec" 0 2 2)"
check "Open MPI 5, root, 4 ranks on 2 cores" "--allow-run-as-root --map-by :OVERSUBSCRIBE" "$(preflags "$fakes/ompi5/mpiexec" 0 2 4)"
check "PRRTE, user, 8 ranks on 2 cores" "--map-by :OVERSUBSCRIBE" "$(preflags "$fakes/prrte/prterun" 1000 2 8)"
check "MPICH, root, 4 ranks on 2 cores" "" "$(preflags "$fakes/mpich/mpiexec" 0 2 4)"
check "Intel MPI, root, 4 ranks on 2 cores" "" "$(preflags "$fakes/intel/mpiexec" 0 2 4)"
check "Open MPI 4 inside a Slurm allocation: the allocation gives the slots" "--allow-run-as-root" \
      "$(SLURM_JOB_ID=7 preflags "$fakes/ompi4/mpiexec" 0 2 4)"

# The printed command is the command that runs, quoted so that it can be pasted.
out=$(HPF_MPI_UID=1000 HPF_MPI_SLOTS=2 bash "$launch" --launcher "$fakes/ompi4/mpiexec" -n 4 ./prog --name "a b")
check "printed command" "== launching: $fakes/ompi4/mpiexec --oversubscribe -n 4 ./prog --name a\\ b " "$(sed -n 1p <<<"$out")"
check "executed command" "ran: --oversubscribe -n 4 ./prog --name a b" "$(sed -n 2p <<<"$out")"
out=$(HPF_MPI_UID=0 bash "$launch" --dry-run --launcher "$fakes/mpich/mpiexec" -n 2 ./prog)
check "--dry-run prints and does not run" "== launching: $fakes/mpich/mpiexec -n 2 ./prog " "$out"

# Inside a Slurm allocation srun is the default launcher; HPF_MPIEXEC overrides it.
out=$(PATH="$fakes/slurm:$PATH" SLURM_JOB_ID=7 bash "$launch" -n 4 ./prog | sed -n 2p)
check "srun inside an allocation" "ran: -n 4 ./prog" "$out"
out=$(PATH="$fakes/slurm:$PATH" SLURM_JOB_ID=7 HPF_MPIEXEC="$fakes/mpich/mpiexec" bash "$launch" --dry-run -n 4 ./prog)
check "HPF_MPIEXEC overrides srun" "== launching: $fakes/mpich/mpiexec -n 4 ./prog " "$out"

# The build takes the compiler wrapper of the launcher's MPI, not whatever mpicxx is first.
compiler_for() {
  bash -c 'source "$1"; read -r family _ < <(hpf_mpi_identify "$2"); hpf_mpi_compiler_for "$2" "$family"' \
    _ "$here/../../scripts/lib/mpi.sh" "$1"
}
check "MPICH launcher: MPICH wrapper next to it, not the Open MPI mpicxx" "$fakes/mpich/mpicxx.mpich" "$(compiler_for "$fakes/mpich/mpiexec")"
check "Open MPI launcher: its mpicxx" "$fakes/ompi4/mpicxx" "$(compiler_for "$fakes/ompi4/mpiexec")"
if compiler_for "$fakes/intel/mpiexec" >/dev/null; then r=found; else r=none; fi
check "no wrapper of the launcher's MPI: an error, not another MPI's wrapper" "none" "$r"

# Usage errors exit 2 with a message naming what was wrong.
err=$(bash "$launch" --launcher "$fakes/ompi4/mpiexec" -n 0 ./prog 2>&1); rc=$?
check "-n 0 exits 2" "2" "$rc"
check "-n 0 is named" "launch.sh: -n needs a positive rank count, got '0'" "$(head -n 1 <<<"$err")"
err=$(bash "$launch" --launcher /nonexistent/mpiexec -n 2 ./prog 2>&1); rc=$?
check "missing launcher exits 2" "2" "$rc"
check "missing launcher is named" "launch.sh: no MPI launcher '/nonexistent/mpiexec' (install one, or name it with --launcher or HPF_MPIEXEC)" "$(head -n 1 <<<"$err")"

# quickstart.sh says what it does, and refuses an unknown mode before installing anything.
help=$(bash "$here/../../scripts/quickstart.sh" --help); rc=$?
check "quickstart --help exits 0" "0" "$rc"
check "quickstart --help names both modes" "2" "$(grep -cE '^  scripts/quickstart.sh (train|test) ' <<<"$help")"
err=$(bash "$here/../../scripts/quickstart.sh" trian 2>&1); rc=$?
check "quickstart with a typo exits 2" "2" "$rc"
check "quickstart with a typo prints its usage" "usage: $here/../../scripts/quickstart.sh train|test   (--help says what each does)" "$err"

# A note where 'localhost' does not resolve (getent fails), nothing where it does.
mpi_lib=$here/../../scripts/lib/mpi.sh
mkdir -p "$fakes/unresolved" "$fakes/resolved"
printf '#!/bin/sh\nexit 2\n' > "$fakes/unresolved/getent"
printf '#!/bin/sh\necho "127.0.0.1       localhost"\n' > "$fakes/resolved/getent"
chmod +x "$fakes/unresolved/getent" "$fakes/resolved/getent"
note=$(PATH=$fakes/unresolved:$PATH bash -c 'source "$1"; hpf_mpi_note_localhost' _ "$mpi_lib" 2>&1); rc=$?
check "localhost unresolved: exit 0" "0" "$rc"
check "localhost unresolved: the note names it and the fix" "== note: 'localhost' does not resolve here, so mpiexec launches may wait 5 s each; a Debian machine's /etc/hosts has the line '127.0.0.1 localhost'" "$note"
note=$(PATH=$fakes/resolved:$PATH bash -c 'source "$1"; hpf_mpi_note_localhost' _ "$mpi_lib" 2>&1)
check "localhost resolved: no note" "" "$note"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
