#!/usr/bin/env bash
# hpf on a fresh Debian 12 machine, in one command:
#   scripts/quickstart.sh train   install what is missing, build, train the Fashion-MNIST CNN on
#                                 4 MPI ranks (2 pipeline stages x 2 replicas)
#   scripts/quickstart.sh test    install what is missing, build, run the whole test suite
# Options (environment): HPF_BUILD_DIR (default build), HPF_JOBS (default: all cores),
# HPF_CMAKE_ARGS (extra CMake arguments), HPF_RANKS (train: MPI ranks, default 4).
set -euo pipefail
mode=${1:-}
case "$mode" in
  train|test) ;;
  *) echo "usage: $0 train|test" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${HPF_BUILD_DIR:-$root/build}
jobs=${HPF_JOBS:-$(nproc)}

# Debian packages (toolchain.md): what hpf builds against, and what the tests compare with.
packages=(build-essential cmake ninja-build pkg-config
          libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev libopenblas-dev libdnnl-dev zlib1g-dev
          libopenmpi-dev openmpi-bin doctest-dev dataset-fashion-mnist)
if [ "$mode" = test ]; then
  # PyTorch is the numerical reference; MPICH is the second MPI the suite runs on.
  packages+=(python3 python3-numpy python3-torch libmpich-dev mpich)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

echo "== configuring and building hpf in $build"
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${HPF_CMAKE_ARGS:-}
if [ "$mode" = train ]; then
  cmake --build "$build" -j "$jobs" --target hpf_fashion_mnist
else
  cmake --build "$build" -j "$jobs"
fi

if [ "$mode" = train ]; then
  ranks=${HPF_RANKS:-4}
  flags=()
  if mpiexec --version 2>&1 | grep -q "Open MPI"; then
    flags+=(--oversubscribe)
    [ "$(id -u)" -ne 0 ] || flags+=(--allow-run-as-root)
    export OMPI_MCA_btl=self,vader OMPI_MCA_btl_base_warn_component_unused=0
  fi
  echo "== training: mpiexec -n $ranks hpf_fashion_mnist --model cnn --stages 2"
  exec mpiexec -n "$ranks" "${flags[@]}" "$build/examples/hpf_fashion_mnist" --model cnn --stages 2
else
  echo "== testing"
  exec ctest --test-dir "$build" --output-on-failure -j "$jobs"
fi
