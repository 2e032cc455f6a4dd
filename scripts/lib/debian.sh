# The Debian 12 packages hpf needs, and their installation (as root, or through sudo). Sourced by
# scripts/quickstart.sh, scripts/test_openmp_mpich.sh and scripts/cuda_compile_check.sh.

# What building, training and the examples need (../shared/docs/toolchain.md); HDF5 is Open MPI's
# parallel build, the flavour of the MPI hpf builds with (cmake/hpfHdf5.cmake).
HPF_PACKAGES_TRAIN=(build-essential cmake ninja-build pkg-config
                    libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev libopenblas-dev libdnnl-dev zlib1g-dev
                    libopenmpi-dev openmpi-bin libhdf5-openmpi-dev doctest-dev dataset-fashion-mnist fortunes)
# The tests also need PyTorch (the numerical reference), GNU time (compile-budget tests), MPICH
# and its HDF5 (the second MPI the suite runs on) and OpenBLAS' OpenMP build (the Kokkos OpenMP
# pass's BLAS, which shares Kokkos' threads: cmake/hpfBlas.cmake).
HPF_PACKAGES_TEST=("${HPF_PACKAGES_TRAIN[@]}" python3 python3-numpy python3-torch time libmpich-dev mpich
                   libhdf5-mpich-dev libopenblas0-openmp)

# hpf_install_packages PKG...: apt-get install those of PKG that are not installed yet.
hpf_install_packages() {
  local missing=() package sudo=()
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || {
      echo "hpf: these Debian packages are missing and installing them needs root or sudo: ${missing[*]}" >&2
      return 1
    }
    sudo=(sudo)
  fi
  echo "== installing: ${missing[*]}"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 "${missing[@]}"
}
