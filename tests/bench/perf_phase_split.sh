#!/usr/bin/env bash
# CPU time of a two-thread ncclrec-analyze run per phase, from perf samples (docs/performance.md,
# "Reading PyTorch Flight Recorder dumps"): files are loaded on one thread per core, then the
# calling thread merges and analyzes alone. Samples of both threads up to the second thread's
# last one are the loading; the calling thread's after that, the serial rest. The wall time of
# the same run on an idle 2-core machine is about the busier loading thread plus the rest.
#
# Usage: perf_phase_split.sh COMMAND [ARGS...]   e.g. perf_phase_split.sh build/bin/ncclrec-analyze /tmp/fr1k
# Needs perf (linux-perf). Exit status: 0 printed; 1 perf failed or the run had one thread; 2 usage.
set -u
[[ $# -ge 1 ]] || { sed -n '8,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
command -v perf >/dev/null || { echo "perf_phase_split.sh: perf is not installed" >&2; exit 1; }
dir="$(mktemp -d "${TMPDIR:-/tmp}/ncclrec-phase-XXXXXX")" || exit 1
trap 'rm -rf "${dir}"' EXIT
freq=4000
perf record -q -F "${freq}" -o "${dir}/perf.data" "$@" >/dev/null 2>"${dir}/err" ||
  { cat "${dir}/err" >&2; exit 1; }
perf script -i "${dir}/perf.data" -F tid,time 2>/dev/null | sed 's/://' >"${dir}/samples"
awk -v f="${freq}" '
  { tid[NR] = $1; t[NR] = $2 }
  NR == 1 { main = $1 }
  $1 != main { last = $2 }
  END {
    if (last == "") { print "perf_phase_split.sh: the run had one thread" > "/dev/stderr"; exit 1 }
    for (i = 1; i <= NR; ++i) {
      if (t[i] <= last) { if (tid[i] == main) m++; else w++ } else rest++
    }
    printf "loading: calling thread %.3f s, other thread(s) %.3f s CPU; then %.3f s on one " \
           "thread; idle 2-core wall about %.3f s\n", m / f, w / f, rest / f,
           (m > w ? m : w) / f + rest / f
  }' "${dir}/samples"
