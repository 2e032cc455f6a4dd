#!/usr/bin/env bash
# Build and install Kokkos 3.4.01 + KokkosKernels 3.4.01 for one backend, from
# Debian's own `trilinos` source package (or a tarball made from it).
#
#   scripts/kokkos/build.sh openmp [options]
#   scripts/kokkos/build.sh cuda [--arch HOPPER90|AMPERE80|AMPERE86|TURING75] [options]
#   scripts/kokkos/build.sh pack-sources OUT.tar.gz [--cache DIR] [--source-tarball FILE]
#
# Then: cmake -DKokkos_ROOT="$(scripts/kokkos/build.sh openmp --print-prefix)" ...
# (for CUDA also -DCMAKE_CXX_COMPILER=<prefix>/bin/nvcc_wrapper).
# Run with --help for the options; see scripts/kokkos/README.md for the details.
# The whole script is one { } block: bash parses all of it before running any of it,
# so editing or pulling this file while a build runs cannot derail that build.
{
set -euo pipefail
shopt -s inherit_errexit  # also stop on errors inside $(...)

readonly KOKKOS_VERSION=3.4.01
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SCRIPT_PATH=$SCRIPT_DIR/$(basename "${BASH_SOURCE[0]}")
readonly SCRIPT_DIR SCRIPT_PATH
readonly PATCH_DIR=$SCRIPT_DIR/patches
readonly SMOKE_DIR=$SCRIPT_DIR/smoke
readonly STAMP_NAME=.hpf-kokkos-stamp

usage() {
  cat <<EOF
Usage: $0 openmp [options]
       $0 cuda [--arch ARCH] [options]
       $0 pack-sources OUT.tar.gz [--cache DIR] [--source-tarball FILE]

Builds Kokkos $KOKKOS_VERSION + KokkosKernels $KOKKOS_VERSION from Debian's trilinos
source package and installs them into one prefix. Does nothing if the prefix
already holds a complete install made by this script and these patches.

  openmp       Kokkos OpenMP+Serial (shared libs, RPATH set), KokkosKernels with
               the OpenBLAS TPL and no ETI.
  cuda         Kokkos CUDA+Serial with CUDA lambdas (static libs, patched for
               CUDA 12/13), KokkosKernels with the cuBLAS TPL and no ETI.
               Needs nvcc (PATH, \$CUDA_ROOT or /usr/local/cuda).
  pack-sources Write a tarball of the two unpatched source folders (about 3.4 MiB),
               for machines without network: build.sh ... --source-tarball FILE.

Options:
  --arch ARCH           CUDA architecture as Kokkos names it (default HOPPER90 = sm_90;
                        also TURING75, AMPERE80, AMPERE86; case-insensitive)
  --prefix DIR          install prefix (default: CACHE/kokkos-$KOKKOS_VERSION-<backend>[-<arch>])
  --cache DIR           cache for sources, builds and logs
                        (default: \${HPF_DEPS_CACHE:-\$HOME/.cache/hpf})
  --source-tarball FILE use FILE (from pack-sources, or Debian's trilinos orig
                        tarball) instead of apt-get source
  -j N, --jobs N        parallel build jobs (default: nproc)
  --print-prefix        print the install prefix and exit; builds nothing
  --force               rebuild even if the prefix is up to date
  --no-check            skip the smoke test of the installed packages
  --keep-build          keep the build trees (CACHE/build/...)
  -h, --help            this text
EOF
}

die() { echo "build.sh: error: $*" >&2; exit 1; }

# ---------------------------------------------------------------- arguments
[ $# -ge 1 ] || { usage >&2; exit 2; }
command=$1; shift
out_tarball=
case $command in
  openmp|cuda) ;;
  pack-sources)
    [ $# -ge 1 ] && [[ $1 != -* ]] || die "pack-sources needs an output file name"
    out_tarball=$1; shift ;;
  -h|--help) usage; exit 0 ;;
  *) usage >&2; die "unknown command '$command' (want openmp, cuda or pack-sources)" ;;
esac

arch=HOPPER90 arch_given=0 prefix='' cache=${HPF_DEPS_CACHE:-${HOME:?HOME is not set}/.cache/hpf}
source_tarball='' jobs='' print_prefix=0 force=0 check=1 keep_build=0
while [ $# -gt 0 ]; do
  case $1 in
    --arch) [ $# -ge 2 ] || die "--arch needs a value"; arch=${2^^}; arch_given=1; shift 2 ;;
    --arch=*) arch=${1#*=}; arch=${arch^^}; arch_given=1; shift ;;
    --prefix) [ $# -ge 2 ] || die "--prefix needs a value"; prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#*=}; shift ;;
    --cache) [ $# -ge 2 ] || die "--cache needs a value"; cache=$2; shift 2 ;;
    --cache=*) cache=${1#*=}; shift ;;
    --source-tarball) [ $# -ge 2 ] || die "--source-tarball needs a value"; source_tarball=$2; shift 2 ;;
    --source-tarball=*) source_tarball=${1#*=}; shift ;;
    -j|--jobs) [ $# -ge 2 ] || die "$1 needs a value"; jobs=$2; shift 2 ;;
    -j*) jobs=${1#-j}; shift ;;
    --jobs=*) jobs=${1#*=}; shift ;;
    --print-prefix) print_prefix=1; shift ;;
    --force) force=1; shift ;;
    --no-check) check=0; shift ;;
    --keep-build) keep_build=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[ -z "$jobs" ] && jobs=$(nproc 2>/dev/null || echo 2)
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "-j wants a positive number, not '$jobs'"
[ "$command" = cuda ] || [ "$arch_given" = 0 ] || die "--arch only applies to 'cuda'"

# Kokkos 3.4 NVIDIA architectures (+ the HOPPER90 backport) that CUDA 12/13 still support.
declare -A CUDA_SM=([TURING75]=sm_75 [AMPERE80]=sm_80 [AMPERE86]=sm_86 [HOPPER90]=sm_90)
if [ "$command" = cuda ]; then
  [ -n "${CUDA_SM[$arch]:-}" ] || die "unsupported --arch '$arch' (want one of: ${!CUDA_SM[*]})"
  sm=${CUDA_SM[$arch]}
  name=kokkos-$KOKKOS_VERSION-cuda-${arch,,}
else
  name=kokkos-$KOKKOS_VERSION-$command
fi
cache=$(realpath -m "$cache")
[ -n "$prefix" ] || prefix=$cache/$name
prefix=$(realpath -m "$prefix")

if [ "$print_prefix" = 1 ]; then
  [ "$command" != pack-sources ] || die "--print-prefix needs 'openmp' or 'cuda'"
  echo "$prefix"
  exit 0
fi

# ---------------------------------------------------------------- logging
mkdir -p "$cache/logs" || die "cannot create the cache directory $cache"
if [ "$command" = pack-sources ]; then
  logfile=$cache/logs/pack-sources-$(date +%Y%m%d-%H%M%S)-$$.log
else
  logfile=$cache/logs/$name-$(date +%Y%m%d-%H%M%S)-$$.log
fi
: > "$logfile"
say() { echo "[build.sh $(date +%H:%M:%S)] $*" | tee -a "$logfile" >&2; }
fail() {
  say "FAILED: $*"
  echo "---- last lines of $logfile ----" >&2
  tail -n 40 "$logfile" >&2
  echo "---- full log: $logfile" >&2
  exit 1
}
# run DESCRIPTION CMD...: output goes to the log only; on failure show its tail
run() {
  local what=$1; shift
  echo "+ $*" >> "$logfile"
  "$@" >> "$logfile" 2>&1 || fail "$what (exit $?)"
}
# shellcheck disable=SC2154  # rc is assigned inside the trap
trap 'rc=$?; [ $rc -eq 0 ] || echo "build.sh: stopped (exit $rc); log: $logfile" >&2' EXIT

is_root() { [ "$(id -u)" = 0 ]; }
seconds() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(seconds)" 'BEGIN { printf "%.0f", b - a }'; }
# cpu_now: set CPU_NOW to the user+sys CPU seconds of the finished child processes.
# The builtin `times` must run in this shell (a $(...) subshell starts from zero).
cpu_now() {
  times > "$logfile.times"
  CPU_NOW=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); n += t[1] * 60 + t[2] } printf "%.0f\n", n }' "$logfile.times")
  rm -f "$logfile.times"
}

# ---------------------------------------------------------------- packages
apt_get() {
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 "$@"
}
# install_missing PKG...: apt-get install the Debian packages that are not installed
install_missing() {
  local missing=() p
  for p in "$@"; do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ] || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  is_root || die "missing Debian packages: ${missing[*]} (install them, or run as root)"
  say "installing ${missing[*]}"
  if ! apt_get install -y --no-install-recommends "${missing[@]}" >> "$logfile" 2>&1; then
    run "apt-get update" apt_get update
    run "apt-get install ${missing[*]}" apt_get install -y --no-install-recommends "${missing[@]}"
  fi
}

# ---------------------------------------------------------------- sources
# Add a deb-src entry for the machine's own Debian mirror (the one the `deb`
# entry for <codename>/main uses), in the same format as that entry.
ensure_deb_src() {
  local codename line file lineno uri
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || die "cannot tell the Debian release from /etc/os-release"
  if apt-get indextargets --format '$(TARGET_OF) $(RELEASE) $(COMPONENT)' 2>/dev/null |
      grep -x "deb-src $codename main" > /dev/null; then
    return 0
  fi
  line=$(apt-get indextargets --format '$(TARGET_OF)|$(RELEASE)|$(COMPONENT)|$(ORIGIN)|$(REPO_URI)|$(SOURCESENTRY)' 2>/dev/null |
         awk -F'|' -v c="$codename" '$1 == "deb" && $2 == c && $3 == "main" { if ($4 == "Debian") { print; found = 1; exit } if (!first) first = $0 }
                                     END { if (!found && first) print first }')
  [ -n "$line" ] || die "no 'deb' entry for $codename main in the apt sources; cannot derive a deb-src entry (use --source-tarball)"
  is_root || die "apt has no deb-src entry for $codename; add one or run as root (or use --source-tarball)"
  uri=$(cut -d'|' -f5 <<< "$line")
  file=$(cut -d'|' -f6 <<< "$line"); lineno=${file##*:}; file=${file%:*}  # file:line or file:stanza
  if [[ $file == *.sources ]]; then
    # deb822 (apt numbers its stanzas from 1): copy the Signed-By of the deb entry's stanza
    local signed_by
    signed_by=$(awk -v n="$lineno" 'BEGIN { RS = "" } NR == n { print }' "$file" |
                awk 'tolower($0) ~ /^signed-by:/ { grab = 1; print; next } grab && /^[ \t]/ { print; next } { grab = 0 }')
    {
      echo "# Added by hpf scripts/kokkos/build.sh: Debian source packages (apt-get source trilinos)"
      echo "Types: deb-src"
      echo "URIs: $uri"
      echo "Suites: $codename"
      echo "Components: main"
      [ -z "$signed_by" ] || echo "$signed_by"
    } > /etc/apt/sources.list.d/hpf-deb-src.sources
    say "added /etc/apt/sources.list.d/hpf-deb-src.sources (deb-src $uri $codename main)"
  else
    # one-line format: reuse the options ([signed-by=...] etc.) of the deb line
    local options
    options=$(sed -n "${lineno}p" "$file" | sed -n 's/^[[:space:]]*deb[[:space:]]\+\(\[[^]]*\]\).*/\1/p')
    echo "deb-src ${options:+$options }$uri $codename main" > /etc/apt/sources.list.d/hpf-deb-src.list
    say "added /etc/apt/sources.list.d/hpf-deb-src.list (deb-src ${options:+$options }$uri $codename main)"
  fi
  run "apt-get update" apt_get update
}

# (grep without -q in pipelines: an early exit would SIGPIPE the writer, and pipefail fail)
apt_knows_trilinos() { apt-cache showsrc trilinos 2>/dev/null | grep '^Package: trilinos$' > /dev/null; }

# Download Debian's trilinos source package into CACHE/src/debian (once) and check it.
fetch_debian_source() {
  local dir=$cache/src/debian dsc orig
  mkdir -p "$dir"
  dsc=$(ls "$dir"/trilinos_*.dsc 2>/dev/null | tail -n 1 || true)
  if [ -z "$dsc" ] || ! ls "$dir"/trilinos_*.orig.tar.* > /dev/null 2>&1; then
    if ! apt_knows_trilinos; then
      ensure_deb_src
      apt_knows_trilinos || {
        run "apt-get update" apt_get update
        apt_knows_trilinos ||
          die "apt knows no source package 'trilinos' even with deb-src configured"
      }
    fi
    say "downloading Debian's trilinos source package (about 166 MB) into $dir"
    local t0; t0=$(seconds)
    (cd "$dir" && run "apt-get source --download-only trilinos" apt-get source --download-only trilinos)
    say "download done in $(elapsed "$t0") s"
    dsc=$(ls "$dir"/trilinos_*.dsc | tail -n 1)
  fi
  orig=$(ls "$dir"/trilinos_*.orig.tar.* | tail -n 1)
  # the .dsc lists the sha256 of the orig tarball: catch truncated or stale downloads
  local want; want=$(awk -v f="$(basename "$orig")" '/^Checksums-Sha256:/ { s = 1; next } /^[^ ]/ { s = 0 } s && $3 == f { print $1 }' "$dsc")
  [ -n "$want" ] || die "$(basename "$orig") is not listed in $dsc"
  echo "$want  $orig" | sha256sum -c --quiet - >> "$logfile" 2>&1 ||
    die "checksum mismatch for $orig; delete $dir and run again"
  echo "$orig"
}

# extract_sources TARBALL DEST: put the unpatched kokkos/ and kokkos-kernels/ into DEST
extract_sources() {
  local tarball=$1 dest=$2 tmp first top
  tmp=$(mktemp -d "$cache/src/.extract.XXXXXX")
  first=$({ tar -tf "$tarball" 2>/dev/null || true; } | head -n 1)
  [ -n "$first" ] || { rm -rf "$tmp"; die "cannot read $tarball as a tar archive"; }
  say "extracting kokkos and kokkos-kernels from $(basename "$tarball")"
  if [[ $first == Trilinos-* || $(basename "$tarball") == trilinos_*.orig.tar.* ]]; then
    run "extract $tarball" tar -xf "$tarball" -C "$tmp" --wildcards '*/packages/kokkos/*' '*/packages/kokkos-kernels/*'
    top=$(dirname "$(find "$tmp" -mindepth 3 -maxdepth 3 -type d -path '*/packages/kokkos' | head -n 1)")
  else
    run "extract $tarball" tar -xf "$tarball" -C "$tmp"
    top=$(find "$tmp" -maxdepth 3 -type f -path '*/kokkos/CMakeLists.txt' | head -n 1)
    top=$(dirname "$(dirname "$top")")
  fi
  [ -d "$top/kokkos" ] && [ -d "$top/kokkos-kernels" ] ||
    { rm -rf "$tmp"; die "$tarball holds no kokkos/ and kokkos-kernels/ folders"; }
  grep -q 'set(Kokkos_VERSION_MAJOR 3)' "$top/kokkos/CMakeLists.txt" &&
    grep -q 'set(Kokkos_VERSION_MINOR 4)' "$top/kokkos/CMakeLists.txt" &&
    grep -q 'set(Kokkos_VERSION_PATCH 01)' "$top/kokkos/CMakeLists.txt" &&
    grep -q 'SET(KokkosKernels_VERSION_MINOR 4)' "$top/kokkos-kernels/CMakeLists.txt" ||
    { rm -rf "$tmp"; die "$tarball does not hold Kokkos/KokkosKernels $KOKKOS_VERSION"; }
  rm -rf "$dest"; mkdir -p "$dest"
  mv "$top/kokkos" "$top/kokkos-kernels" "$dest/"
  rm -rf "$tmp"
}

# Unpatched sources in CACHE/src/kokkos-VERSION-pristine (made once).
pristine_sources() {
  local dir=$cache/src/kokkos-$KOKKOS_VERSION-pristine
  mkdir -p "$cache/src"
  if [ ! -f "$dir/.complete" ]; then
    local tarball=$source_tarball
    if [ -n "$tarball" ]; then
      [ -r "$tarball" ] || die "cannot read --source-tarball $tarball"
    else
      tarball=$(fetch_debian_source)
    fi
    extract_sources "$tarball" "$dir"
    echo "from $(realpath "$tarball") on $(date -u +%FT%TZ)" > "$dir/.complete"
  fi
  echo "$dir"
}

# Apply each patch unless it is already applied; fail if it neither applies nor is applied.
apply_patches() {
  local dir=$1 p
  for p in "$PATCH_DIR"/*.patch; do
    if patch -d "$dir" -p1 -R --dry-run -s -f < "$p" > /dev/null 2>&1; then
      echo "already applied: $(basename "$p")" >> "$logfile"
    elif patch -d "$dir" -p1 -N --dry-run -s < "$p" >> "$logfile" 2>&1; then
      run "patch $(basename "$p")" patch -d "$dir" -p1 -N -s --no-backup-if-mismatch -i "$p"
      say "applied $(basename "$p")"
    else
      fail "patch $(basename "$p") does not apply to $dir"
    fi
  done
}

# Patched copy for the current patch set, CACHE/src/kokkos-VERSION-<hash>.
patched_sources() {
  local pristine=$1 dir=$cache/src/kokkos-$KOKKOS_VERSION-$patch_hash
  if [ ! -f "$dir/.complete" ]; then
    rm -rf "$dir" "$dir.tmp"
    cp -a "$pristine" "$dir.tmp"
    rm -f "$dir.tmp/.complete"
    apply_patches "$dir.tmp"
    mv "$dir.tmp" "$dir"
    touch "$dir/.complete"
    # older patch sets are not needed any more
    find "$cache/src" -mindepth 1 -maxdepth 1 -type d -name "kokkos-$KOKKOS_VERSION-*" \
      ! -name "*-pristine" ! -name "kokkos-$KOKKOS_VERSION-$patch_hash" -exec rm -rf {} + 2>/dev/null || true
  else
    apply_patches "$dir"  # idempotent: verifies that every patch is in
  fi
  echo "$dir"
}

# ---------------------------------------------------------------- locking
# lock NAME: hold CACHE/locks/NAME.lock (until unlock NAME or the end of the script),
# so that builds sharing the cache do not step on each other.
declare -A LOCK_FD=()
lock() {
  mkdir -p "$cache/locks"
  command -v flock > /dev/null || return 0
  local fd
  exec {fd}> "$cache/locks/$1.lock"
  if ! flock -n "$fd"; then
    say "waiting for another build.sh holding $cache/locks/$1.lock"
    flock "$fd"
  fi
  LOCK_FD[$1]=$fd
}
unlock() {
  [ -n "${LOCK_FD[$1]:-}" ] || return 0
  local fd=${LOCK_FD[$1]}
  flock -u "$fd"
  exec {fd}>&-
  unset "LOCK_FD[$1]"
}

patch_hash=$(cat "$PATCH_DIR"/*.patch | sha256sum | cut -c1-12)

# ---------------------------------------------------------------- pack-sources
if [ "$command" = pack-sources ]; then
  install_missing tar gzip
  lock sources
  src=$(pristine_sources)
  out=$(realpath -m "$out_tarball")
  mkdir -p "$(dirname "$out")"
  run "tar $out" tar -C "$src" --sort=name --owner=0 --group=0 --numeric-owner \
      --mtime='2021-05-20 00:00Z' -czf "$out.tmp" kokkos kokkos-kernels
  mv "$out.tmp" "$out"
  say "wrote $out ($(stat -c %s "$out") bytes): unpatched kokkos/ and kokkos-kernels/ $KOKKOS_VERSION"
  exit 0
fi

# ---------------------------------------------------------------- toolchain
case $command in
  openmp)
    install_missing g++ make cmake patch libopenblas-dev
    cxx=$(command -v g++)
    toolchain="$("$cxx" -dumpfullversion) $(cmake --version | sed -n 1p)" ;;
  cuda)
    install_missing g++ make cmake patch
    nvcc=
    if [ -n "${CUDA_ROOT:-}" ] && [ -x "$CUDA_ROOT/bin/nvcc" ]; then nvcc=$CUDA_ROOT/bin/nvcc; fi
    [ -n "$nvcc" ] || nvcc=$(command -v nvcc || true)
    if [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ]; then nvcc=/usr/local/cuda/bin/nvcc; fi
    [ -n "$nvcc" ] || die "nvcc not found (PATH, \$CUDA_ROOT, /usr/local/cuda); Debian main has no CUDA toolkit"
    nvcc=$(realpath "$nvcc")
    PATH=$(dirname "$nvcc"):$PATH
    export PATH
    nvcc_version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
    "$nvcc" --list-gpu-code 2>/dev/null | grep -x "$sm" > /dev/null ||
      die "nvcc $nvcc_version cannot generate $sm code (--arch $arch)"
    export NVCC_WRAPPER_DEFAULT_ARCH=$sm
    toolchain="nvcc $nvcc_version $(g++ -dumpfullversion) $(cmake --version | sed -n 1p)" ;;
esac
build_hash=$({ cat "$SCRIPT_PATH" "$PATCH_DIR"/*.patch; echo "$command ${arch:-} $toolchain"; } | sha256sum | cut -c1-16)

install_complete() {
  [ -f "$prefix/$STAMP_NAME" ] && grep -qx "hash=$build_hash" "$prefix/$STAMP_NAME" || return 1
  local f
  for f in lib/cmake/Kokkos/KokkosConfig.cmake lib/cmake/KokkosKernels/KokkosKernelsConfig.cmake \
           include/Kokkos_Core.hpp include/KokkosBlas3_gemm.hpp; do
    [ -f "$prefix/$f" ] || return 1
  done
  ls "$prefix"/lib/libkokkoscore.* "$prefix"/lib/libkokkoskernels.* > /dev/null 2>&1 || return 1
  [ "$command" != cuda ] || [ -x "$prefix/bin/nvcc_wrapper" ]
}

if [ "$force" = 0 ] && install_complete; then
  say "up to date: $prefix (stamp $build_hash)"
  rm -f "$logfile"
  exit 0
fi
lock "$name"
if [ "$force" = 0 ] && install_complete; then  # another build.sh just finished it
  say "up to date: $prefix (stamp $build_hash)"
  exit 0
fi

say "building Kokkos + KokkosKernels $KOKKOS_VERSION ($command${sm:+ $arch/$sm}) into $prefix with -j$jobs"
say "log: $logfile"
lock sources
pristine=$(pristine_sources)
src=$(patched_sources "$pristine")
unlock sources

# Start from an empty prefix, but only delete a prefix that this script created
# (stamp says owned=yes); never a shared one such as /usr/local.
owned=yes
if [ -f "$prefix/$STAMP_NAME" ]; then
  grep -qx "owned=no" "$prefix/$STAMP_NAME" && owned=no
elif [ -d "$prefix" ] && [ -n "$(ls -A "$prefix")" ]; then
  owned=no
  say "warning: installing into the non-empty $prefix, which this script did not create"
fi
[ "$owned" = no ] || rm -rf "$prefix"
mkdir -p "$prefix"
printf 'hash=incomplete\nowned=%s\n' "$owned" > "$prefix/$STAMP_NAME"  # until the end
build=$cache/build/$name
rm -rf "$build"; mkdir -p "$build"

common=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib
        -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_EXTENSIONS=OFF)
case $command in
  openmp)
    kokkos_args=(-DCMAKE_CXX_COMPILER="$cxx" -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_SERIAL=ON
                 -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_RPATH="$prefix/lib")
    kk_args=(-DCMAKE_CXX_COMPILER="$cxx" -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_RPATH="$prefix/lib"
             -DKokkosKernels_ENABLE_TPL_BLAS=ON -DBLA_VENDOR=OpenBLAS
             -DKokkosKernels_INST_EXECSPACE_SERIAL=OFF -DKokkosKernels_INST_DOUBLE=OFF -DKokkosKernels_INST_FLOAT=OFF
             -DKokkosKernels_INST_OFFSET_INT=OFF -DKokkosKernels_INST_OFFSET_SIZE_T=OFF) ;;
  cuda)
    kokkos_args=(-DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper" -DKokkos_ENABLE_CUDA=ON
                 -DKokkos_ENABLE_CUDA_LAMBDA=ON -DKokkos_ENABLE_CUDA_CONSTEXPR=ON
                 -DKokkos_ENABLE_SERIAL=ON "-DKokkos_ARCH_$arch=ON" -DBUILD_SHARED_LIBS=OFF)
    # cuBLAS gemm/gemv/... specialisations are header templates (no ETI needed);
    # cuSPARSE's are only in ETI TUs, so without ETI it must stay off.
    kk_args=(-DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper" -DBUILD_SHARED_LIBS=OFF
             -DKokkosKernels_ENABLE_TPL_CUBLAS=ON -DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF
             -DKokkosKernels_ENABLE_TPL_BLAS=OFF -DKokkosKernels_ENABLE_TPL_LAPACK=OFF
             -DKokkosKernels_INST_DOUBLE=OFF -DKokkosKernels_INST_FLOAT=OFF
             -DKokkosKernels_INST_OFFSET_INT=OFF -DKokkosKernels_INST_OFFSET_SIZE_T=OFF) ;;
esac

# The installed nvcc_wrapper belongs to this install: it defaults to its arch and to the
# nvcc it was built with (CUDA_ROOT still overrides that). Kokkos is configured with this
# copy so that its CMake package, which records the compiler (Kokkos_CXX_COMPILER, used by
# kokkos_launch_compiler when a consumer compiles with g++), does not point into the cache.
configure_wrapper() {
  local w=$prefix/bin/nvcc_wrapper
  if grep -q '^nvcc_compiler=nvcc$' "$w"; then
    grep -q '^default_arch="${NVCC_WRAPPER_DEFAULT_ARCH:-sm_90}"$' "$w" ||
      fail "unexpected $w (is patch 0001 applied?)"
    sed -i -e "s|^default_arch=\"\${NVCC_WRAPPER_DEFAULT_ARCH:-sm_90}\"\$|default_arch=\"\${NVCC_WRAPPER_DEFAULT_ARCH:-$sm}\"|" \
           -e "s|^nvcc_compiler=nvcc\$|nvcc_compiler=$nvcc  # set by hpf scripts/kokkos/build.sh|" "$w"
  fi
  grep -q "^default_arch=\"\${NVCC_WRAPPER_DEFAULT_ARCH:-$sm}\"\$" "$w" || fail "could not set the default arch in $w"
}
if [ "$command" = cuda ]; then
  install -D -m 755 "$src/kokkos/bin/nvcc_wrapper" "$prefix/bin/nvcc_wrapper"
  configure_wrapper
fi

# ---- Kokkos
t0=$(seconds); cpu_now; c0=$CPU_NOW
say "Kokkos: configure"
run "Kokkos configure" cmake -S "$src/kokkos" -B "$build/kokkos" "${common[@]}" "${kokkos_args[@]}"
say "Kokkos: build + install"
run "Kokkos build" cmake --build "$build/kokkos" --parallel "$jobs"
run "Kokkos install" cmake --install "$build/kokkos"
cpu_now; t_kokkos=$(elapsed "$t0") c_kokkos=$((CPU_NOW - c0))
say "Kokkos done in $t_kokkos s (CPU $c_kokkos s)"

[ "$command" != cuda ] || configure_wrapper  # the install step put back the plain copy

# find_package(KokkosKernels) after find_package(Kokkos) with only -DKokkos_ROOT=<prefix>
# would otherwise find another KokkosKernels (e.g. Debian's Serial one in /usr).
cat >> "$prefix/lib/cmake/Kokkos/KokkosConfig.cmake" <<'EOF'

# Added by hpf scripts/kokkos/build.sh: let find_package(KokkosKernels) pick the
# KokkosKernels installed next to this Kokkos unless the caller chose one.
if(NOT KokkosKernels_DIR AND NOT KokkosKernels_ROOT
   AND EXISTS "${CMAKE_CURRENT_LIST_DIR}/../KokkosKernels/KokkosKernelsConfig.cmake")
  get_filename_component(_hpf_kk_dir "${CMAKE_CURRENT_LIST_DIR}/../KokkosKernels" ABSOLUTE)
  set(KokkosKernels_DIR "${_hpf_kk_dir}" CACHE PATH "KokkosKernels next to this Kokkos" FORCE)
  unset(_hpf_kk_dir)
endif()
EOF

# ---- KokkosKernels
t0=$(seconds); cpu_now; c0=$CPU_NOW
say "KokkosKernels: configure"
run "KokkosKernels configure" cmake -S "$src/kokkos-kernels" -B "$build/kokkos-kernels" \
    "${common[@]}" -DKokkos_ROOT="$prefix" -DKokkosKernels_ENABLE_TESTS=OFF "${kk_args[@]}"
say "KokkosKernels: build + install"
run "KokkosKernels build" cmake --build "$build/kokkos-kernels" --parallel "$jobs"
run "KokkosKernels install" cmake --install "$build/kokkos-kernels"
cpu_now; t_kk=$(elapsed "$t0") c_kk=$((CPU_NOW - c0))
say "KokkosKernels done in $t_kk s (CPU $c_kk s)"

# ---- smoke test of the installed packages, as a C++20 CMake consumer would use them
if [ "$check" = 1 ]; then
  t0=$(seconds)
  say "smoke test: C++20 CMake consumer with -DKokkos_ROOT=$prefix"
  smoke_args=(-DKokkos_ROOT="$prefix" -DHPF_EXPECT_PREFIX="$prefix" -DCMAKE_BUILD_TYPE=Release)
  [ "$command" != cuda ] || smoke_args+=(-DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper")
  run "smoke configure" cmake -S "$SMOKE_DIR" -B "$build/smoke" "${smoke_args[@]}"
  run "smoke build" cmake --build "$build/smoke" --parallel "$jobs"
  if [ "$command" = openmp ]; then
    run "smoke run (2 OpenMP threads)" env OMP_NUM_THREADS=2 OMP_PROC_BIND=false OPENBLAS_NUM_THREADS=1 \
        "$build/smoke/hpf_kokkos_smoke" --expect-threads=2
  else
    if [ -x /usr/bin/python3 ]; then
      run "device code is $sm only" /usr/bin/python3 "$SCRIPT_DIR/cuda_archs.py" --expect "$sm" "$build/smoke/hpf_kokkos_smoke"
    fi
    if [ -e /dev/nvidia0 ] || [ -e /dev/nvidiactl ]; then
      run "smoke run on the GPU" "$build/smoke/hpf_kokkos_smoke"
    else
      say "no GPU here: the CUDA smoke test is compile-only"
    fi
  fi
  say "smoke test passed in $(elapsed "$t0") s"
fi

{
  echo "hash=$build_hash"
  echo "owned=$owned"
  echo "kokkos=$KOKKOS_VERSION"
  echo "backend=$command${sm:+ $arch $sm}"
  echo "toolchain=$toolchain"
  echo "patches=$patch_hash"
  echo "sources=$(cat "$pristine/.complete" 2>/dev/null || echo unknown)"
  echo "built=$(date -u +%FT%TZ) jobs=$jobs wall_s: kokkos=$t_kokkos kokkoskernels=$t_kk cpu_s: kokkos=$c_kokkos kokkoskernels=$c_kk"
} > "$prefix/$STAMP_NAME"
[ "$keep_build" = 1 ] || rm -rf "$build"
say "installed $prefix (wall: Kokkos ${t_kokkos} s, KokkosKernels ${t_kk} s)"
exit 0
}
