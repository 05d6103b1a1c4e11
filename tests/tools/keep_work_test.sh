#!/usr/bin/env bash
# keep_work.sh: with NCCLREC_TEST_KEEP set, a work directory is copied under it with the command
# line that made it; unset, nothing is copied.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$tmp/work/dumps" && echo data > "$tmp/work/dumps/rank0.ncclrec.pb"
run() {  # run KEEP: sources keep_work.sh as a test script would, with arguments, and keeps $tmp/work
  env ${1:+NCCLREC_TEST_KEEP=$1} HOSTNCCL_DROP_LINK='2>3@3' bash -c \
    '. "$1" && keep_work "$2"' keep_work_probe.sh "$here/keep_work.sh" "$tmp/work" 2>&1
}
out=$(run "") || fail "keep_work failed without NCCLREC_TEST_KEEP"
[[ -z $out ]] || fail "keep_work said something without NCCLREC_TEST_KEEP: $out"
out=$(run "$tmp/keep") || fail "keep_work failed"
kept=("$tmp"/keep/keep_work_probe-*)
[[ ${#kept[@]} == 1 && -d ${kept[0]} ]] || fail "expected one keep_work_probe-* directory: ${kept[*]}"
[[ $out == "kept $tmp/work in ${kept[0]} (NCCLREC_TEST_KEEP)" ]] || fail "unexpected line: $out"
cmp -s "$tmp/work/dumps/rank0.ncclrec.pb" "${kept[0]}/dumps/rank0.ncclrec.pb" ||
  fail "the dumps were not copied"
grep -qx 'HOSTNCCL_DROP_LINK=2>3@3' "${kept[0]}/command.txt" ||
  fail "command.txt lacks the fault's environment: $(cat "${kept[0]}/command.txt")"
grep -q '^keep_work_probe.sh ' "${kept[0]}/command.txt" ||
  fail "command.txt lacks the command line: $(cat "${kept[0]}/command.txt")"
run "$tmp/keep" > /dev/null && kept=("$tmp"/keep/keep_work_probe-*)
[[ ${#kept[@]} == 2 ]] || fail "a second run must not overwrite the first: ${kept[*]}"
echo "PASS: kept in ${kept[0]##*/} and ${kept[1]##*/}, nothing without NCCLREC_TEST_KEEP"
