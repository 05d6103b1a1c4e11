#!/usr/bin/env bash
# Flight Recorder dump -> model, per entry: the direct conversion against the JSON-document path,
# measured in one run on one generated dump (docs/performance.md, "Reading PyTorch Flight Recorder
# dumps"). Prints: entries, via_json ns/entry, direct ns/entry, ratio.
#
# Usage: run_fr_load_bench.sh [--bench PATH] [--entries N] [--min-time SECONDS]
#   --bench     the benchmark binary (default: build/bin/ncclrec_fr_load_bench of this tree)
#   --entries   all-reduces in the generated rank-0 dump (default 2000, as in the fleet figures)
#   --min-time  --benchmark_min_time per benchmark (default 1)
# Exit status: 0 both ran and printed their figures; 1 one did not (its output is shown); 2 bad
# usage. Timings are reported, never judged.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bench="${here}/../../build/bin/ncclrec_fr_load_bench"
entries=2000
min_time=1
usage() { sed -n '6,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; }
die_usage() { echo "run_fr_load_bench.sh: $1" >&2; usage; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bench) [[ $# -ge 2 ]] || die_usage "--bench needs a path"; bench="$2"; shift 2 ;;
    --entries) [[ $# -ge 2 ]] || die_usage "--entries needs a count"; entries="$2"; shift 2 ;;
    --min-time) [[ $# -ge 2 ]] || die_usage "--min-time needs seconds"; min_time="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die_usage "unknown argument '$1'" ;;
  esac
done
[[ -x "${bench}" ]] || die_usage "no benchmark binary at '${bench}' (build ncclrec_fr_load_bench)"
[[ "${entries}" =~ ^[1-9][0-9]*$ ]] || die_usage "--entries must be >= 1, not '${entries}'"
[[ "${min_time}" =~ ^[0-9]*\.?[0-9]+$ ]] || die_usage "--min-time must be seconds, not '${min_time}'"

dir="$(mktemp -d "${TMPDIR:-/tmp}/ncclrec-fr-bench-XXXXXX")" || exit 1
trap 'rm -rf "${dir}"' EXIT
/usr/bin/python3 "${here}/../tools/gen_fr_dumps.py" healthy "${dir}/dumps" --ranks 2 \
  --entries "${entries}" || { echo "run_fr_load_bench.sh: the generator failed" >&2; exit 1; }
out="$("${bench}" "${dir}/dumps/nccl_trace_rank_0" --benchmark_min_time="${min_time}" \
         --benchmark_format=json 2>&1)" || { echo "${out}" >&2; exit 1; }
/usr/bin/python3 - "${out}" <<'PY' || { echo "${out}" >&2; exit 1; }
import json, sys
text = sys.argv[1]
doc = json.loads(text[text.index("{"):])
rate = {b["name"]: b["ns_per_entry"] for b in doc["benchmarks"]}
via, direct = rate["via_json"], rate["direct"]
print(text[:text.index("{")].strip())
print(f"via_json {via * 1e9:.0f} ns/entry, direct {direct * 1e9:.0f} ns/entry, "
      f"direct is {via / direct:.1f}x faster (same run)")
PY
