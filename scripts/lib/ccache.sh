# shellcheck shell=bash
# hpf_compiler_launcher: CMake arguments that compile through ccache when it is on PATH (none
# otherwise, or with HPF_CCACHE=0). CI's host builds (the OpenMP/MPICH pass, the sanitizer build,
# the CUDA compile check) then recompile only what changed since the machine's last run instead of
# rebuilding ~100 translation units each on 2 cores. Paths are hashed relative to the checkout
# (CCACHE_BASEDIR) and without the working directory (CCACHE_NOHASHDIR), so a fresh clone of the
# same commit in another folder, as CI makes, hits the same entries. ccache 4 handles nvcc_wrapper
# like any compiler: it is keyed on the wrapper and on every header the compile reads.
# Needs `root` (the checkout) set. Used by scripts/test_openmp_mpich.sh, scripts/test_sanitizers.sh
# and scripts/cuda_compile_check.sh.
hpf_compiler_launcher=()
if [ "${HPF_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  hpf_compiler_launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
