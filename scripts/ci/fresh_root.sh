#!/usr/bin/env bash
# The README's two commands, exactly as README.md writes them (scripts/ci/readme_commands.sh), on
# fresh Debian 12 roots made by debootstrap that hold only what a new machine has (minbase plus
# build-essential, cmake, ninja, git, python3 and sudo, and the installer's /etc/hosts) and none of
# the host's package or build caches (the roots' own compile cache is below):
#   root   in one fresh root, as root
#   user   in another, as an unprivileged user who has sudo
# KIND:train runs only the README's first (train) command there, KIND:test only the second, each on
# a machine that has run nothing else. The roots run side by side, each in its own copy of the
# pristine root with its own download folder: CI runs `root:test user:train`, so that the user's
# install, build and training overlap the root's downloads instead of following its test run.
# The train command must exit 0 and print a final test accuracy of at least HPF_TRAIN_ACCURACY_FLOOR
# (default 84 %); the test command must pass with no test skipped for want of a package.
# The checkout is at the same path in both roots, and their compilers share one ccache, so what
# one root compiled is a cache hit for the other (ccache handles compilers side by side). It is kept
# between runs of this script on this machine (HPF_FRESH_CCACHE), apart from the host's own builds,
# so a later run compiles only what changed. ccache is the one thing here a new machine lacks: it
# caches compiles, never packages, and a header a package should have installed is read for real
# on every compile (a hit needs its hash), so a missing install step still fails the build.
# Each root is removed, with its mounts and any process left in it, on every exit, failed or not.
#
#   scripts/ci/fresh_root.sh [root[:train|:test]] [user[:train|:test]]   (default: root user; needs root
#                                                                         and network to Debian)
#
# Environment: HPF_FRESH_MIRROR (Debian mirror, default http://deb.debian.org/debian),
# HPF_FRESH_DIR (where the roots go, default /var/tmp), HPF_TRAIN_ACCURACY_FLOOR (%, default 84),
# HPF_FRESH_TIMEOUT (seconds per command, default 3600), HPF_FRESH_CCACHE (the roots' compile cache, default fresh-root-ccache in
# HPF_DEPS_CACHE, ~/.cache/hpf, where scripts/kokkos/build.sh keeps its builds;
# `none`: an empty one for this run only, every file compiled).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mirror=${HPF_FRESH_MIRROR:-http://deb.debian.org/debian}
limit=${HPF_FRESH_TIMEOUT:-3600}  # a bound on a hang: the test command alone took 2400+ s cold here
# The train command's final test accuracy must reach this (%): the CNN's one-epoch accuracy over
# five seeds was 84.56-88.15 % (benchmarks/RESULTS.md, "Fashion-MNIST ... over seeds"); a broken
# step, optimizer or data path lands far below, at chance (10 %) or in the 70s.
accuracy_floor=${HPF_TRAIN_ACCURACY_FLOOR:-84}
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(root user)
for run in "${runs[@]}"; do
  case "$run" in root|user|root:train|user:train|root:test|user:test) ;;
    *) echo "usage: $0 [root[:train|:test]] [user[:train|:test]]" >&2; exit 2 ;; esac
done
[ "$(id -u)" -eq 0 ] || { echo "fresh_root.sh: needs root (debootstrap, chroot, mounts)" >&2; exit 1; }
mapfile -t commands < <("$repo/scripts/ci/readme_commands.sh" "$repo/README.md")
[ ${#commands[@]} -eq 2 ] || exit 1

started=$(date +%s)
step() { echo "== [fresh root, $(( $(date +%s) - started )) s] $*"; }
work=$(mktemp -d "${HPF_FRESH_DIR:-/var/tmp}/hpf-fresh-root.XXXXXX")

# Processes still inside a root (an MPI rank a failed run left behind) would keep its mounts busy.
kill_inside() {
  local proc target
  for proc in /proc/[0-9]*; do
    target=$(readlink "$proc/root" 2>/dev/null) || continue
    case "$target" in "$1"|"$1"/*) kill -9 "${proc#/proc/}" 2>/dev/null || true ;; esac
  done
}
# unmount_all [DIR]: every mount under DIR (default: all of this run's roots).
unmount_all() {
  local mount
  while read -r mount; do
    umount "$mount" 2>/dev/null || umount -l "$mount"
  done < <(findmnt -rn -o TARGET | grep -F "${1:-$work}/" | sort -r)
}
cleanup() {
  local status=$?
  trap - EXIT INT TERM HUP
  step "removing $work"
  kill_inside "$work"
  sleep 1
  unmount_all
  if findmnt -rn -o TARGET | grep -qF "$work/"; then
    echo "fresh_root.sh: mounts under $work remain; not removing it" >&2
    status=1
  else
    rm -rf --one-file-system "$work"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# mount_root DIR ARCHIVES: what programs in a chroot expect, a download folder (made empty here:
# every package comes from the mirror; one per root, as apt locks its folder) and the roots'
# compile cache.
mount_root() {
  mount -t proc proc "$1/proc"
  mount -t sysfs -o ro sysfs "$1/sys"
  mount --bind /dev "$1/dev"
  mount -t tmpfs -o mode=1777 tmpfs "$1/dev/shm"
  mkdir -p "$2/partial"
  mount --bind "$2" "$1/var/cache/apt/archives"
  mkdir -p "$1/var/cache/hpf-ccache"
  mount --bind "$compile_cache" "$1/var/cache/hpf-ccache"
  cp /etc/resolv.conf "$1/etc/resolv.conf"
}

step "debootstrap bookworm (minbase) from $mirror"
compile_cache=${HPF_FRESH_CCACHE:-${HPF_DEPS_CACHE:-${HOME:?HOME is not set}/.cache/hpf}/fresh-root-ccache}
[ "$compile_cache" != none ] || compile_cache=$work/ccache
mkdir -p "$compile_cache"
# The unprivileged user's compiles write to it too, so every folder a root run makes must be
# writable: the cache's own configuration gives every ccache call that uses it umask 000 (ccache
# makes its folders with the caller's umask), and chmod mends a cache an older run left.
echo 'umask = 000' > "$compile_cache/ccache.conf"
chmod -R a+rwX "$compile_cache"
step "compile cache: $compile_cache"
debootstrap --variant=minbase bookworm "$work/pristine" "$mirror" > "$work/debootstrap.log" 2>&1 ||
  { tail -n 30 "$work/debootstrap.log"; exit 1; }
# A new machine's apt sources: the release, its updates and security.
cat > "$work/pristine/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SOURCES
# A new machine's /etc/hosts, as Debian's installer writes it. debootstrap writes none, and without
# 'localhost' in it most of Open MPI's launches wait 5 s: the test suite took 18 minutes, not 9.
cat > "$work/pristine/etc/hosts" <<HOSTS
127.0.0.1	localhost
127.0.1.1	$(hostname)

# The following lines are desirable for IPv6 capable hosts
::1     localhost ip6-localhost ip6-loopback
ff02::1 ip6-allnodes
ff02::2 ip6-allrouters
HOSTS
mount_root "$work/pristine" "$work/archives"
step "adding what a new machine has: build-essential cmake ninja-build git python3 sudo (and ccache)"
chroot "$work/pristine" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
  sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends build-essential cmake ninja-build git python3 sudo ca-certificates ccache' \
  > "$work/base.log" 2>&1 || { tail -n 30 "$work/base.log"; exit 1; }
CCACHE_DIR=/var/cache/hpf-ccache chroot "$work/pristine" ccache --zero-stats >/dev/null  # hits and misses of this run
unmount_all

# run_commands KIND[:train|:test]: copy the pristine root, check out this repository in it and run
# the README's commands there (both, or the one named) as KIND (root or user); what passed is
# appended to $work/summary.
run_commands() {
  local kind=${1%:*} dir="$work/${1%:*}" home user user_spec=() command status output t0 skips summary
  local selected=("${commands[@]}")
  case "$1" in *:train) selected=("${commands[0]}") ;; *:test) selected=("${commands[1]}") ;; esac
  local checkout=/opt/hpf
  step "copying the pristine root for the $kind run"
  cp -a "$work/pristine" "$dir"
  if [ "$kind" = root ]; then
    home=/root user=root
  else
    home=/home/hpf user=hpf
    chroot "$dir" useradd --create-home --shell /bin/bash hpf
    echo 'hpf ALL=(ALL) NOPASSWD: ALL' > "$dir/etc/sudoers.d/hpf"
    chmod 0440 "$dir/etc/sudoers.d/hpf"
    user_spec=(--userspec="$(chroot "$dir" id -u hpf):$(chroot "$dir" id -g hpf)")
  fi
  git clone --quiet "$repo" "$dir$checkout"
  chroot "$dir" chown -R "$user:$user" "$checkout"
  mount_root "$dir" "$work/archives-$kind"
  for command in "${selected[@]}"; do
    step "as $kind in a fresh root: $command"
    t0=$(date +%s)
    output="$work/$kind-$(echo "$command" | tr -c 'a-zA-Z0-9' '_').log"
    set +e
    timeout --kill-after=30 "$limit" chroot "${user_spec[@]}" "$dir" env -i HOME="$home" USER="$user" LOGNAME="$user" \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 TERM=dumb \
      ${OPENBLAS_CORETYPE:+OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE} ${OPENBLAS_L2_SIZE:+OPENBLAS_L2_SIZE=$OPENBLAS_L2_SIZE} \
      CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_DIR=/var/cache/hpf-ccache \
      bash -c "cd $checkout && $command" < /dev/null 2>&1 | tee "$output"
    status=${PIPESTATUS[0]}
    set -e
    kill_inside "$dir"
    if [ "$status" -ne 0 ]; then
      step "FAILED as $kind: '$command' exited $status after $(( $(date +%s) - t0 )) s"
      exit 1
    fi
    case "$command" in
      *train*)
        accuracy=$(grep -o 'final test accuracy: [0-9.]*%' "$output" | tail -n 1)
        [ -n "$accuracy" ] || { step "FAILED as $kind: '$command' printed no final test accuracy"; exit 1; }
        awk -v a="${accuracy//[!0-9.]/}" -v floor="$accuracy_floor" 'BEGIN { exit !(a + 0 >= floor + 0) }' ||
          { step "FAILED as $kind: '$command' reached $accuracy, below the floor of $accuracy_floor%"; exit 1; }
        summary="as $kind: '$command' passed in $(( $(date +%s) - t0 )) s, $accuracy" ;;
      *)
        # The test command counts the tests CTest skipped (scripts/lib/ctest.sh): none may lack
        # what it needs; those this configuration cannot run (Kokkos OpenMP) are named there.
        skips=$(grep -E '^== skipped tests: ' "$output" | tail -n 1)
        [[ "$skips" =~ ^"== skipped tests: "[0-9]+" ("[0-9]+" not in this configuration, 0 missing what they need)"$ ]] ||
          { step "FAILED as $kind: '$command' printed '${skips:-no skipped-tests count}'"; exit 1; }
        summary="as $kind: '$command' passed in $(( $(date +%s) - t0 )) s, $(grep -E 'tests passed' "$output" | tail -n 1), ${skips#== }" ;;
    esac
    step "$summary"
    echo "$summary" >> "$work/summary"
    step "compile cache so far in this run: $(CCACHE_DIR=/var/cache/hpf-ccache chroot "$dir" ccache --print-stats 2>/dev/null |
                                                  awk -F'\t' '$1 ~ /^(direct_cache_hit|preprocessed_cache_hit|cache_miss)$/ { printf "%s=%s ", $1, $2 }')"
  done
  unmount_all "$dir"
  rm -rf --one-file-system "$dir"
}

# The roots side by side, each line of each one's output marked with its kind.
pids=()
for run in "${runs[@]}"; do
  (run_commands "$run" 2>&1 | sed -u "s/^/[${run%:*}] /"; exit "${PIPESTATUS[0]}") &
  pids+=($!)
done
failed=0
for k in "${!pids[@]}"; do
  wait "${pids[$k]}" || { step "FAILED: the ${runs[$k]} run"; failed=1; }
done
[ "$failed" = 0 ] || exit 1
step "all passed:"
sed 's/^/   /' "$work/summary"
