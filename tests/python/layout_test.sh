#!/usr/bin/env bash
# Checks the recorder's CPython layout table (recorder/python_frames.cc) against the headers of
# every CPython 3.9+ found here: pyenv builds ($PYENV_ROOT or ~/.pyenv) and /usr/include/python3.*
# (Debian's python3-dev). Usage: layout_test.sh LAYOUT_PRINT
# Exit 0 when every version found matches, 1 on a mismatch, 77 (skipped, with the reason) when no
# CPython headers are on this machine.
set -euo pipefail
print=${1:?usage: layout_test.sh LAYOUT_PRINT}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
checked=0
failed=0
for inc in "$pyenv_root"/versions/*/include/python3.* /usr/include/python3.*; do
  [ -f "$inc/Python.h" ] || continue
  minor=${inc##*python3.}
  minor=${minor%%[!0-9]*}
  [ -n "$minor" ] || continue
  expected=$("$print" "$minor")
  if [ "$expected" = unsupported ]; then
    echo "layout: 3.$minor ($inc): not supported by the recorder, not checked"
    continue
  fi
  if ! cc -w -I"$inc" -I"$inc/internal" "$here/layout_probe.c" -o "$work/probe" 2>"$work/cc.log"; then
    echo "layout: 3.$minor ($inc): cannot compile the probe against these headers:" >&2
    cat "$work/cc.log" >&2
    failed=1
    continue
  fi
  if diff <("$work/probe") <(echo "$expected") >"$work/diff"; then
    echo "layout: 3.$minor ($inc): matches"
    checked=$((checked + 1))
  else
    echo "layout: 3.$minor ($inc): the table differs from the headers (< headers, > table):" >&2
    cat "$work/diff" >&2
    failed=1
  fi
done
[ "$failed" -eq 0 ] || exit 1
if [ "$checked" -eq 0 ]; then
  echo "SKIPPED: no CPython 3.9+ headers found (pyenv builds or python3-dev)"
  exit 77
fi
echo "layout: $checked CPython versions match"
