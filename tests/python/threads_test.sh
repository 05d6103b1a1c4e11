#!/usr/bin/env bash
# Runs threads_check.py under one CPython with libncclrec.so preloaded over the stub NCCL, then
# checks with `ncclrec-analyze --stacks` that the dump's thread snapshot puts each Python thread at
# its own function: the sleep poll loop, the GIL-holding busy loop, the queue.get() consumer, and
# the thread that blocks every signal (its Python frames read from the interpreter's thread list).
#   threads_test.sh PYTHON SHIM STUB_LIB ANALYZE
# Exit 0 when all are found, 1 otherwise, 77 (skipped, reason printed) when PYTHON is absent.
set -euo pipefail
python=${1:?usage}; shim=${2:?usage}; stub=${3:?usage}; analyze=${4:?usage}
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v "$python" >/dev/null 2>&1; then
  echo "SKIPPED: $python not found on this machine"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/sanitizer_env.sh"
if [[ $shim_deps == *libtsan* ]]; then
  echo "SKIPPED: ThreadSanitizer builds take no thread snapshots (TSan defers the snapshot signal)"
  exit 77
fi
if ! NCCLREC_DIR="$work/dumps" NCCLREC_DUMP_ON_EXIT=0 \
  LD_PRELOAD="$sanitizer_preload$shim${LD_PRELOAD:+:$LD_PRELOAD}" \
  "$python" "$here/threads_check.py" "$stub" 2>"$work/stderr"; then
  echo "threads: the script failed:" >&2
  cat "$work/stderr" >&2
  exit 1
fi
"$analyze" --stacks "$work"/dumps/*.signal.ncclrec.pb >"$work/stacks.txt"
cat "$work/stacks.txt"
status=0
for fn in poll_loop busy_loop consumer deaf_waiter; do
  grep -q "thread \"[^\"]*\" in $fn() threads_check.py:" "$work/stacks.txt" ||
    { echo "threads: no thread placed in $fn()" >&2; status=1; }
done
# The consumer waits inside queue.get (Queue.get, then Condition.wait, or a lock's acquire).
# Before 3.11 code objects carry no qualified name: "get" rather than "Queue.get".
grep -A3 "in consumer() threads_check.py:" "$work/stacks.txt" |
  grep -Eq "queue.py:[0-9]+  (Queue\.)?get  \[py\]" ||
  { echo "threads: the consumer is not shown inside Queue.get" >&2; status=1; }
grep -q "in deaf_waiter() threads_check.py:[0-9]*, no answer (signal blocked).*Python frames from the interpreter's thread list" "$work/stacks.txt" ||
  { echo "threads: the signal-blocking thread is not shown from the interpreter's thread list" >&2; status=1; }
exit $status
