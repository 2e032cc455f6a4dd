#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compile time and peak compiler memory of one training step (train_step.cpp) per model and
# compiler, as markdown tables:
#   1. the zoo models, full compile (-O3 code generation) and -fsyntax-only (the type machinery);
#   2. PreActResNet of depth 9n + 2 for n = 2, 18, 111, 500: depth must not cost compile time.
# Measurements run one at a time; the load average is printed with each table because a busy
# machine inflates wall time (CPU time = user + sys is the steadier number).
#
#   benchmarks/compile_time/measure.sh [-b BUILD_DIR] [-c "g++ clang++"] [-r REPEATS] [--quick]
#
# -b: the configured build directory (for hpf/config.hpp; default: build next to this repo)
# -c: compilers to measure (default: g++ clang++)
# -r: runs per cell, the fastest kept (default 1)
# --quick: only the -fsyntax-only columns
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build_dir="$root/build"
compilers="g++ clang++"
repeats=1
quick=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    -b) build_dir=$2; shift 2 ;;
    -c) compilers=$2; shift 2 ;;
    -r) repeats=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "measure.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

gnu_time=/usr/bin/time
if ! "$gnu_time" -f "%e" true >/dev/null 2>&1; then
  echo "measure.sh: GNU time (/usr/bin/time, Debian package 'time') is required" >&2
  exit 1
fi
if [[ ! -f "$build_dir/include/hpf/config.hpp" ]]; then
  echo "measure.sh: $build_dir/include/hpf/config.hpp not found; configure first or pass -b" >&2
  exit 1
fi
kokkos_include=${KOKKOS_INCLUDE_DIR:-/usr/include/trilinos}

# The project's flags (CMAKE_BUILD_TYPE=Release, hpf_project_options, the hpf target).
common_flags=(-std=c++20 -O3 -DNDEBUG -Wall -Wextra -Wpedantic -march=native
              -I"$root/include" -I"$build_dir/include" -isystem "$kokkos_include")
compiler_flags() {
  case "$("$1" --version | head -1)" in
    *clang*) echo "-fbracket-depth=16384" ;;  # as the hpf target adds for Clang
    *) echo "" ;;
  esac
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# measure <compiler> <model> <mode: full|syntax> -> "wall cpu peak_mib" (fastest of $repeats)
measure() {
  local cxx=$1 model=$2 mode=$3 best="" i
  local -a extra
  read -r -a extra <<<"$(compiler_flags "$cxx")"
  local -a out=(-c -o "$work/tu.o")
  [[ $mode == syntax ]] && out=(-fsyntax-only)
  for ((i = 0; i < repeats; ++i)); do
    if ! "$gnu_time" -f "%e %U %S %M" -o "$work/time" "$cxx" "${common_flags[@]}" "${extra[@]}" \
        "-DHPF_MODEL=$model" "${out[@]}" "$here/train_step.cpp" 2>"$work/err"; then
      echo "measure.sh: $cxx failed on $model:" >&2
      head -20 "$work/err" >&2
      echo "failed - -"
      return
    fi
    local line
    line=$(tail -1 "$work/time")
    local result
    result=$(awk '{printf "%.1f %.1f %.0f", $1, $2 + $3, $4 / 1024}' <<<"$line")
    if [[ -z $best ]] || awk -v a="${result%% *}" -v b="${best%% *}" 'BEGIN{exit !(a < b)}'; then
      best=$result
    fi
  done
  echo "$best"
}

# leaves <model>...: Model::leaves of each, from a small program (links nothing from Kokkos).
leaves_of() {
  local src="$work/leaves.cpp" m
  {
    echo '#include <hpf/zoo/models.hpp>'
    echo '#include <cstdio>'
    echo 'int main() {'
    for m in "$@"; do echo "  std::printf(\"%zu\\n\", ${m}::leaves);"; done
    echo '}'
  } >"$src"
  local cxx
  read -r cxx _ <<<"$compilers"
  "$cxx" -std=c++20 -I"$root/include" -I"$build_dir/include" -isystem "$kokkos_include" "$src" -o "$work/leaves" \
    2>/dev/null || "$cxx" -std=c++20 -I"$root/include" -I"$build_dir/include" -isystem "$kokkos_include" "$src" \
    -o "$work/leaves" -ltrilinos_kokkoscore -ldl
  "$work/leaves"
}

version() { "$1" --version | head -1; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

echo "Host: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); load average at start: $(load)"
for cxx in $compilers; do echo "- $cxx: $(version "$cxx")"; done
echo "- flags: ${common_flags[*]} (+ -fbracket-depth=16384 for Clang)"
echo

zoo=(hpf::zoo::Mlp hpf::zoo::ResNet20 hpf::zoo::ResNet56 hpf::zoo::PreActResNet164 hpf::zoo::PreActResNet1001)
mapfile -t zoo_leaves < <(leaves_of "${zoo[@]}")

modes=(full syntax)
[[ $quick == 1 ]] && modes=(syntax)
for mode in "${modes[@]}"; do
  if [[ $mode == full ]]; then
    echo "### Full compile (-c, -O3): one training step (forward, backward, SGD)"
  else
    echo "### -fsyntax-only: the type machinery and template instantiation, no code generation"
  fi
  echo
  echo "| model | leaves | compiler | wall s | CPU s | peak MiB |"
  echo "|---|---:|---|---:|---:|---:|"
  for i in "${!zoo[@]}"; do
    for cxx in $compilers; do
      read -r wall cpu mib <<<"$(measure "$cxx" "${zoo[$i]}" "$mode")"
      echo "| ${zoo[$i]#hpf::zoo::} | ${zoo_leaves[$i]} | $cxx | $wall | $cpu | $mib |"
    done
  done
  echo
  echo "(load average after: $(load))"
  echo
done

echo "### Scaling: PreActResNet<9n + 2>, the same block types for every n"
echo
series=(2 18 111 500)
models=()
for n in "${series[@]}"; do models+=("hpf::zoo::PreActResNet<$((9 * n + 2))>"); done
mapfile -t series_leaves < <(leaves_of "${models[@]}")
if [[ $quick == 1 ]]; then
  echo "| n | depth | leaves | compiler | syntax wall s | syntax CPU s | syntax peak MiB |"
  echo "|---:|---:|---:|---|---:|---:|---:|"
else
  echo "| n | depth | leaves | compiler | wall s | CPU s | peak MiB | syntax wall s | syntax CPU s | syntax peak MiB |"
  echo "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|"
fi
for i in "${!series[@]}"; do
  for cxx in $compilers; do
    row="| ${series[$i]} | $((9 * series[i] + 2)) | ${series_leaves[$i]} | $cxx |"
    if [[ $quick == 0 ]]; then
      read -r wall cpu mib <<<"$(measure "$cxx" "${models[$i]}" full)"
      row+=" $wall | $cpu | $mib |"
    fi
    read -r wall cpu mib <<<"$(measure "$cxx" "${models[$i]}" syntax)"
    echo "$row $wall | $cpu | $mib |"
  done
done
echo
echo "(load average at the end: $(load))"
