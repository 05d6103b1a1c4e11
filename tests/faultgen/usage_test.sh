#!/usr/bin/env bash
# Bad input to ncclrec_faultgen and run.sh: one line on stderr and exit code 2; --describe of
# every fault kind is one JSON document that names the kind, its culprit and its expected class.
#   usage_test.sh FAULTGEN_BIN
set -uo pipefail
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
fail=0
expect() {  # expect CODE DESCRIPTION COMMAND...
  local want=$1 what=$2
  shift 2
  "$@" > /dev/null 2> "$tmp/err"
  local got=$?
  if [[ $got != "$want" ]]; then
    echo "FAIL: $what: exit $got, expected $want" >&2
    fail=1
  elif [[ $want != 0 && $(wc -l < "$tmp/err") -lt 1 ]]; then
    echo "FAIL: $what: no message on stderr" >&2
    fail=1
  fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
expect 2 "unknown fault" "$bin" --seed 1 --fault gated_collective --describe
expect 2 "no seed" "$bin" --describe
expect 2 "world out of range" "$bin" --seed 1 --world 9 --describe
expect 2 "run without RANK" env -u RANK -u WORLD_SIZE "$bin" --seed 1
expect 2 "run with the wrong WORLD_SIZE" env RANK=0 WORLD_SIZE=99 "$bin" --seed 1
expect 2 "run.sh bad count" "$here/run.sh" --count x
expect 2 "run.sh unknown flag" "$here/run.sh" --frobnicate
expect 2 "run.sh missing binary" env FAULTGEN_BIN=/nonexistent "$here/run.sh" --count 1
expect 2 "run.sh build folder that does not exist" "$here/run.sh" --count 1 --build /nonexistent
# A relative --build resolves from where run.sh was started, not from each program's folder.
mkdir -p "$tmp/rel/bin" "$tmp/rel/lib"
said=$(cd "$tmp" && env -u FAULTGEN_BIN -u CXXRUN_BIN -u NCCLREC_SHIM -u ANALYZE_BIN \
  "$here/run.sh" --count 1 --build rel 2>&1)
if [[ $said != *"$tmp/rel/bin/ncclrec_faultgen not found"* ]]; then
  echo "FAIL: a relative --build is not resolved to an absolute path: $said" >&2
  fail=1
fi
kinds="none gated skipped size dtype redop root op missing_send missing_recv exit crash stall
       split_subset abort init_skip init_two_ids init_nranks init_dup_rank"
for kind in $kinds; do
  if ! "$bin" --seed 7 --fault "$kind" --describe > "$tmp/$kind.json"; then
    echo "FAIL: --describe --fault $kind failed" >&2
    fail=1
  fi
done
# One Python start for all of them (seconds each on a loaded machine).
python3 - "$tmp" $kinds << 'PY' || fail=1
import json, sys
bad = 0
for kind in sys.argv[2:]:
    try:
        d = json.load(open("%s/%s.json" % (sys.argv[1], kind)))
        f, e = d["fault"], d["expected"]
        ok = f["kind"] == kind and 2 <= d["world"] <= 8 and bool(e["class"])
        ok = ok and (e["ranks"] == [] if kind == "none"
                     else e["ranks"] == [f["rank"]] and bool(e["callsites"]))
    except (OSError, ValueError, KeyError) as err:
        ok, d = False, str(err)
    if not ok:
        print("FAIL: --describe --fault %s: %s" % (kind, json.dumps(d)[:300]), file=sys.stderr)
        bad = 1
sys.exit(bad)
PY
[[ $fail == 0 ]] && echo PASS
exit $fail
