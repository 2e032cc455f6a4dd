#!/usr/bin/env bash
# scripts/ci/readme_commands.sh, which gives CI the README's first-screen commands: they come out
# exactly as written (a typo stays a typo, so CI fails on it), comments are dropped, and anything
# but two commands is an error. Also checks this repository's README names the quickstart's modes.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
extract=$here/../../scripts/ci/readme_commands.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
check() {
  if [ "$2" = "$3" ]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); printf 'FAILED: %s\n  expected: %s\n  actual:   %s\n' "$1" "$2" "$3"; fi
}
readme() {  # readme FILE LINE...: a README whose first sh block holds the given lines
  local file=$work/$1; shift
  { echo "# title"; echo; echo '```sh'; echo "not this block"; echo '```'
    echo "On a fresh Debian 12 machine (as root, or a user with sudo):"; echo; echo '```sh'
    printf '%s\n' "$@"; echo '```'; echo; echo '```sh'; echo "nor this one"; echo '```'; } > "$file"
  echo "$file"
}

check "two commands, comments dropped" $'scripts/quickstart.sh train\nscripts/quickstart.sh test' \
  "$("$extract" "$(readme a.md 'scripts/quickstart.sh train   # train it' 'scripts/quickstart.sh test    # test it')")"
check "a typo is kept" $'scripts/quickstart.sh trian\nscripts/quickstart.sh test' \
  "$("$extract" "$(readme b.md 'scripts/quickstart.sh trian   # train it' 'scripts/quickstart.sh test')")"
"$extract" "$(readme c.md 'scripts/quickstart.sh train')" >/dev/null 2>"$work/err"; rc=$?
check "one command is an error" "1" "$rc"
check "the error names the count" "found 1" "$(grep -o 'found [0-9]*' "$work/err")"
"$extract" "$(readme d.md 'a' 'b' 'c')" >/dev/null 2>&1; rc=$?
check "three commands are an error" "1" "$rc"

# This repository's README: the two commands are the quickstart's two modes, train first.
check "README's commands" $'scripts/quickstart.sh train\nscripts/quickstart.sh test' "$("$extract")"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
