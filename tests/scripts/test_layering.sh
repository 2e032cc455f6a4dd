#!/usr/bin/env bash
# The include graph follows the architecture (README "Architecture"): each folder of include/hpf
# includes only the folders below it, so e.g. nothing under parallel/ reaches train/ or a data-set
# reader. Fails naming every include that breaks the rule, then shows that it can fail at all by
# checking a made-up header that breaks one.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# folder -> the hpf folders (and single headers) its headers may include besides its own.
declare -A allowed=(
  [meta]=""
  [trace]="config.hpp"
  [system]=""
  [tensor]="meta"
  # layers keep OpenBLAS' own threads out of the way of oneDNN's (system/blas_threads.hpp)
  [layers]="meta tensor trace config.hpp system/blas_threads.hpp"
  [model]="meta tensor trace layers"
  [optim]="meta tensor trace"
  [data]="meta tensor"
  [comm]="meta trace config.hpp system"
  [io]="meta tensor layers model"
  [zoo]="meta tensor layers model"
  [parallel]="meta tensor trace layers model optim comm data/dataset.hpp data/sampler.hpp data/shard.hpp"
  [train]="meta tensor trace layers model optim comm data parallel io oracle config.hpp"
  # the oracle reads the partition and the schedule, never MPI (architecture.md); its calibration
  # loads training samples the way a step does and reads which pages it wrote; a ranking predicts
  # on the host's threads
  [oracle]="meta tensor trace layers model optim io/detail/json.hpp parallel/partition.hpp parallel/schedule.hpp parallel/gradient_reduction.hpp parallel/bucket_size.hpp data/dataset.hpp parallel/batch_loader.hpp system/resident_memory.hpp system/for_each_index.hpp"
)

# check FOLDER FILE...: prints each include of FILE that FOLDER may not use; fails if any.
check() {
  local folder=$1 bad=0
  shift
  local file target
  for file in "$@"; do
    while IFS= read -r target; do
      local top=${target%%/*} ok=0 permitted
      [ "$top" = "$folder" ] && ok=1
      for permitted in ${allowed[$folder]}; do
        if [ "$permitted" = "$top" ] || [ "$permitted" = "$target" ]; then ok=1; fi
      done
      if [ $ok = 0 ]; then
        echo "  ${file#"$root"/}: includes hpf/$target, which $folder/ may not use"
        bad=1
      fi
    done < <(sed -n 's|^#include <hpf/\([^>]*\)>.*|\1|p' "$file")
  done
  return $bad
}

status=0
checked=0
for folder in "${!allowed[@]}"; do
  mapfile -t files < <(find "$root/include/hpf/$folder" -name '*.hpp' 2>/dev/null | sort)
  [ ${#files[@]} -gt 0 ] || { echo "no headers in include/hpf/$folder" >&2; status=1; continue; }
  checked=$((checked + ${#files[@]}))
  check "$folder" "${files[@]}" || status=1
done
for folder in "$root"/include/hpf/*/; do
  name=$(basename "$folder")
  [ -n "${allowed[$name]+set}" ] || { echo "include/hpf/$name/ has no layering rule in $0"; status=1; }
done
echo "checked the includes of $checked headers"

# The check itself must be able to fail.
probe=$(mktemp --suffix=.hpp)
trap 'rm -f "$probe"' EXIT
printf '#include <hpf/train/options.hpp>\n#include <hpf/data/fashion_mnist.hpp>\n' > "$probe"
if check parallel "$probe" > /dev/null; then
  echo "the layering check passed a parallel/ header that includes train/ and a data-set reader"
  status=1
fi
[ $status = 0 ] && echo "every include follows the layering"
exit $status
