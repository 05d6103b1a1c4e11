#!/usr/bin/env bash
# Cost of Python frames on the record path: one ctypes ncclAllReduce (stub NCCL, one rank) made
# DEPTH Python frames deep, timed in three configurations, alternated ROUNDS times in one run:
#   direct   no shim
#   native   libncclrec.so with NCCLREC_PYTHON_DEPTH=0 (native stacks only)
#   python   libncclrec.so with Python frames (NCCLREC_PYTHON_DEPTH=DEPTH)
# Prints the median ns per call of each, the ns Python frames add (python - native), and ratios.
# Timings are reported, never judged. See docs/performance.md.
#
# Usage: run_python_bench.sh [--build DIR] [--python PY] [--depth N] [--calls N] [--rounds N]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../../build"
python=/usr/bin/python3
depth=16
calls=200000
rounds=5
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --depth) depth=$2; shift 2 ;;
    --calls) calls=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_python_bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
shim="$build/lib/libncclrec.so"
stub="$build/stub/libnccl.so.2"
for f in "$shim" "$stub"; do
  [ -f "$f" ] || { echo "run_python_bench.sh: $f not found: build first (scripts/build.sh)" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {  # config -> ns per call
  case "$1" in
    direct) "$python" "$here/python_bench.py" "$stub" "$depth" "$calls" ;;
    native) NCCLREC_DIR="$work/d" NCCLREC_PYTHON_DEPTH=0 LD_PRELOAD="$shim" \
              "$python" "$here/python_bench.py" "$stub" "$depth" "$calls" ;;
    python) NCCLREC_DIR="$work/d" NCCLREC_PYTHON_DEPTH=$depth LD_PRELOAD="$shim" \
              "$python" "$here/python_bench.py" "$stub" "$depth" "$calls" ;;
  esac | awk '/ns_per_call/ {print $2}'
}
declare -A samples
for ((r = 0; r < rounds; r++)); do
  for c in direct native python; do samples[$c]+="$(run $c) "; done
  rm -rf "$work/d"
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
d=$(echo "${samples[direct]}" | median)
n=$(echo "${samples[native]}" | median)
p=$(echo "${samples[python]}" | median)
echo "python frames bench: $("$python" -V 2>&1), $depth frames deep, $calls calls x $rounds rounds (median ns per call)"
printf '%-8s %10s   %s\n' config ns samples
printf '%-8s %10s   %s\n' direct "$d" "${samples[direct]}" native "$n" "${samples[native]}" python "$p" "${samples[python]}"
awk -v d="$d" -v n="$n" -v p="$p" 'BEGIN {
  printf "Python frames add %.0f ns per call (python - native); shim ratio to direct: native %.2f, python %.2f\n", p - n, n / d, p / d }'
