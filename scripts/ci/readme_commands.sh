#!/usr/bin/env bash
# Prints the README's first-screen commands, one a line, exactly as README.md writes them (the
# first ```sh block after "On a fresh Debian 12 machine", without trailing comments), so CI runs
# what a reader would type. Fails unless there are exactly two.
#   scripts/ci/readme_commands.sh [README.md]
set -euo pipefail
readme=${1:-$(dirname "${BASH_SOURCE[0]}")/../../README.md}
mapfile -t commands < <(awk '
  /On a fresh Debian 12 machine/ { found = 1; next }
  found && !inside && /^```sh[[:space:]]*$/ { inside = 1; next }
  inside && /^```/ { exit }
  inside { sub(/[[:space:]]+#.*$/, ""); sub(/^[[:space:]]+/, ""); if (length($0)) print }
' "$readme")
if [ ${#commands[@]} -ne 2 ]; then
  echo "readme_commands.sh: expected 2 commands in the first sh block after 'On a fresh Debian 12 machine' of $readme, found ${#commands[@]}" >&2
  exit 1
fi
printf '%s\n' "${commands[@]}"
