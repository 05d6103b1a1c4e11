#!/usr/bin/env bash
# Runs a job under libncclrec.so on hostnccl with default settings and no launcher of ours: the
# ranks start ncclrec-watch themselves at a stall (NCCLREC_WATCHER=auto), which writes report.json
# in NCCLREC_DIR. Checks the live verdict's class and culprits, its headline, and that it came
# within 15 s of the stall.
#   watch_test.sh CLASS RANKS HEADLINE_REGEX BIN SHIM HOSTNCCL_DIR WORLD [ARGS...]
#   (RANKS as JSON, e.g. "[3]")
set -uo pipefail
if [[ $# -lt 7 ]]; then
  echo "usage: $0 CLASS RANKS HEADLINE_REGEX BIN SHIM HOSTNCCL_DIR WORLD [ARGS...]" >&2
  exit 2
fi
cls=$1 ranks=$2 regex=$3 bin=$4 shim=$5 hostnccl=$6 world=$7
shift 7
. "$(dirname "$0")/hostnccl_ranks.sh"
rank_env=(-u NCCLREC_TIMEOUT -u NCCLREC_WATCHER)  # default settings
start_ranks "$world" "$shim" "$hostnccl" "$bin" "$@"
report=$work/dumps/report.json
for ((i = 0; i < 600; i++)); do
  [[ -s $report ]] && break
  sleep 0.1
done
sleep 0.5  # the watcher's own lines after the file
cat "$work"/rank*.log
if [[ ! -s $report ]]; then
  echo "FAIL: no report.json from ncclrec-watch within 60 s" >&2
  exit 1
fi
python3 - "$report" "$cls" "$ranks" "$regex" << 'PY'
import json, re, sys
report, cls, ranks, regex = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
doc = json.load(open(report))
v = doc.get("verdict") or {}
headline = v.get("headline", "")
print("verdict:", v.get("class"), v.get("ranks"), headline)
after = (doc.get("timeline") or {}).get("verdict_after_s")
print("verdict after the stall began: %s s" % after)
errors = []
if v.get("class") != cls:
    errors.append("class %r, expected %r" % (v.get("class"), cls))
if v.get("ranks") != ranks:
    errors.append("ranks %r, expected %r" % (v.get("ranks"), ranks))
if not re.search(regex, headline):
    errors.append("the headline does not match: " + regex)
if after is None or after >= 15:
    errors.append("verdict_after_s %r, expected under 15" % after)
for e in errors:
    print("FAIL:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
code=$?
[[ $code == 0 ]] && echo "PASS"
exit $code
