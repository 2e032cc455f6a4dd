#!/usr/bin/env bash
# Compile hpf's programs for CUDA, without running them, and check that each executable holds
# device code for the chosen architecture (and only for it). Kokkos + KokkosKernels for CUDA come
# from scripts/kokkos/build.sh (Debian's source package, cached under ~/.cache/hpf). Installs the
# Debian packages `scripts/quickstart.sh test` installs.
#
#   scripts/cuda_compile_check.sh          every test, example, benchmark and tool (70 executables)
#   scripts/cuda_compile_check.sh --ci     the programs that together put every layer, the engine
#                                          (fit in every strategy, Trainer, stages on two execution
#                                          spaces), checkpoints, the timeline and the oracle's
#                                          calibration on the device (CI_TARGETS below): 10-18 min
#                                          of 2 cores, after Kokkos CUDA's 6 (CI leaves it to
#                                          developers, docs/testing.md)
#
# Fails without nvcc (CUDA 13 is under /usr/local/cuda on these machines): a check that cannot run
# is a failure, never a pass. Options (environment): HPF_CUDA_ARCH (Kokkos name, default HOPPER90),
# HPF_BUILD_DIR (default build-cuda-check), HPF_JOBS, HPF_CMAKE_ARGS.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${HPF_BUILD_DIR:-$root/build-cuda-check}
jobs=${HPF_JOBS:-$(nproc)}
arch=${HPF_CUDA_ARCH:-HOPPER90}
# The --ci set: both examples (MLP and CNN through every strategy, checkpoints and the timeline;
# ResNet-1001 as a pipeline: BatchNorm, Residual, Repeat, global pooling), the oracle (it times
# every zoo model's units), the layer tests of what no zoo model uses (AvgPool, MeanSquaredError,
# GELU, LayerNorm) and of Conv2D's im2col + GEMM path in double, the equivalence of fit with
# Trainer (float and double), stages on two execution spaces, fit<Auto>, and a checkpointed run;
# the language model (Embedding, PositionEmbedding, MultiHeadAttention, LayerNorm per position, a
# loss per position, text data; the oracle also times the GPT and CosmoFlow's 3-D layers), Dropout
# and the sequence layers' tests; bf16: every layer's products with bf16 inputs and the bf16 arrays
# a gradient exchange sends (the CNN's equivalence test also exchanges them).
CI_TARGETS=(hpf_fashion_mnist hpf_resnet1001_pipeline hpf-oracle hpf_layers_test_avg_pool
            hpf_layers_test_mean_squared_error hpf_layers_test_conv2d hpf_parallel_test_equivalence_cnn
            hpf_parallel_test_stage_spaces hpf_train_test_auto hpf_train_checkpointed hpf_layers_test_gelu
            hpf_layers_test_layer_norm hpf_language_model hpf_layers_test_dropout hpf_layers_test_embedding
            hpf_layers_test_matmul_precision hpf_layers_test_bf16_gemm hpf_tensor_test_bf16)
targets=()
case "${1:-}" in
  --ci) targets=("${CI_TARGETS[@]}") ;;
  "") ;;
  *) echo "usage: $0 [--ci]" >&2; exit 2 ;;
esac

if ! command -v nvcc >/dev/null 2>&1; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
  else
    echo "== CUDA compile check FAILED: no nvcc on PATH or in /usr/local/cuda/bin" >&2
    exit 1
  fi
fi

# shellcheck source=lib/debian.sh
source "$root/scripts/lib/debian.sh"
# shellcheck source=lib/ccache.sh
source "$root/scripts/lib/ccache.sh"
hpf_install_packages "${HPF_PACKAGES_TEST[@]}"

echo "== Kokkos + KokkosKernels for CUDA $arch (cached after the first build)"
"$root/scripts/kokkos/build.sh" cuda --arch "$arch" -j "$jobs"
kokkos=$("$root/scripts/kokkos/build.sh" cuda --arch "$arch" --print-prefix)
# The install's nvcc_wrapper compiles for its architecture by default (build.sh sets it there).
sm=$(sed -n 's/^default_arch="${NVCC_WRAPPER_DEFAULT_ARCH:-\(sm_[0-9]*\)}"$/\1/p' "$kokkos/bin/nvcc_wrapper")
[ -n "$sm" ] || { echo "no default architecture in $kokkos/bin/nvcc_wrapper" >&2; exit 1; }

echo "== configuring and building ${targets[*]:-every test, example and benchmark} for CUDA ($sm) in $build"
# The header self-containment checks are host compiles of the same headers the tests include, so
# they are left to the first pass. Host code is built at -O0: g++ optimising nvcc's host output is
# two thirds of the time here and proves nothing about CUDA; device code is optimised as always.
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS=-O0 -DKokkos_ROOT="$kokkos" \
      -DCMAKE_CXX_COMPILER="$kokkos/bin/nvcc_wrapper" -DHPF_ENABLE_BENCHMARKS=ON -DHPF_CHECK_HEADERS=OFF -DHPF_TEST_OPTIMIZATION= \
      "${hpf_compiler_launcher[@]}" ${HPF_CMAKE_ARGS:-}
start=$(date +%s)
build_targets=("${targets[@]}")
[ ${#targets[@]} -gt 0 ] || build_targets=(all hpf_benchmark_programs)  # what a plain build leaves out too
cmake --build "$build" -j "$jobs" --target "${build_targets[@]}"
echo "== built in $(( $(date +%s) - start )) s"

echo "== device code of every executable (expect $sm only)"
# Every target of the project is named hpf_* (programs hpf-*); CMakeFiles holds only CMake's own probes.
mapfile -t executables < <(find "$build" -path '*/CMakeFiles' -prune -o -type f -perm -u+x \( -name 'hpf_*' -o -name 'hpf-*' \) -print | sort)
if [ ${#executables[@]} -eq 0 ]; then
  echo "no executables found in $build" >&2
  exit 1
fi
if [ ${#targets[@]} -gt 0 ]; then  # only what this run built: an earlier full run leaves others
  mapfile -t executables < <(for e in "${executables[@]}"; do
                               for t in "${targets[@]}"; do [ "$(basename "$e")" != "$t" ] || echo "$e"; done
                             done)
  [ ${#executables[@]} -eq ${#targets[@]} ] ||
    { echo "built ${#executables[@]} of the ${#targets[@]} executables: ${targets[*]}" >&2; exit 1; }
fi
/usr/bin/python3 "$root/scripts/kokkos/cuda_archs.py" --expect "$sm" "${executables[@]}"
echo "== ${#executables[@]} executables hold $sm device code"
