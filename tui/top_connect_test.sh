#!/usr/bin/env bash
# ncclrec-top --connect against a real cxxrun agent: cxxrun runs a 4-rank hostnccl job under
# libncclrec.so (rank 3 sleeps in host code, ranks 0-2 wait in all-reduce #3) and serves its
# black boxes (launcher/top_server.h); ncclrec-top --once reads them through it with the token
# file cxxrun wrote. A wrong token is refused with one line and exit code 1.
#   top_connect_test.sh NCCLREC_TOP CXXRUN SCENARIO_BIN SHIM
# Exit status: 0 pass, 1 fail, 2 bad usage.
set -uo pipefail
if [[ $# -ne 4 ]]; then
  echo "usage: $0 NCCLREC_TOP CXXRUN SCENARIO_BIN SHIM" >&2
  exit 2
fi
top=$1 cxxrun=$2 scenario=$3 shim=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/ncclrec-top-connect-XXXXXX")
job=
cleanup() {
  # SIGTERM: cxxrun stops its workers (NCCLREC_DUMP_WAIT=1 bounds the wait for their dumps).
  if [[ -n $job ]]; then
    kill -TERM "$job" 2> /dev/null
    wait "$job" 2> /dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

NCCLREC_DIR=$work/dumps NCCLREC_TIMEOUT=600 NCCLREC_DUMP_WAIT=1 LD_PRELOAD=$shim \
  "$cxxrun" --standalone --master-port 0 --nproc-per-node 4 --run-id connect-test --nccl host \
  "$scenario" stuck_in_host 6 2 3 > "$work/out.log" 2> "$work/err.log" &
job=$!

line=
for ((i = 0; i < 100; i++)); do
  line=$(grep -m1 'cxxrun: ncclrec-top --connect' "$work/err.log")
  [[ -n $line ]] && break
  sleep 0.1
done
[[ -n $line ]] || { cat "$work/err.log" >&2; echo "FAIL: cxxrun did not say how to connect" >&2; exit 1; }
endpoint=$(sed -E 's/.*--connect ([^ ]+).*/\1/' <<< "$line")
token_file=$(sed -E 's/.*--token-file ([^ ]+).*/\1/' <<< "$line")
echo "cxxrun said: $line"
[[ $token_file == "$work/dumps/connect-test/top."*".endpoint" ]] ||
  { echo "FAIL: unexpected token file '$token_file'" >&2; exit 1; }
[[ $(stat -c %a "$token_file") == 600 ]] || { echo "FAIL: $token_file is not mode 0600" >&2; exit 1; }

# Until ranks 0-2 wait in #3 and the banner is up (a second without progress).
ok=0
for ((i = 0; i < 300; i++)); do
  "$top" --once --size 120x24 --hang-after 1 --connect "$endpoint" --token-file "$token_file" \
    > "$work/once.txt" 2> "$work/once.err"
  code=$?
  if [[ $(grep -c 'AllReduce #3 .*enqueued' "$work/once.txt") == 3 ]] &&
    grep -q 'HANG?' "$work/once.txt"; then
    ok=1
    break
  fi
  sleep 0.1
done
cat "$work/once.txt"
[[ $ok == 1 ]] || { cat "$work/once.err" "$work/err.log" >&2; echo "FAIL: the ranks did not show" >&2; exit 1; }
grep -q "agents .*:$work/dumps/connect-test/attempt_0" "$work/once.txt" ||
  { echo "FAIL: the title does not name the agent's directory" >&2; exit 1; }
grep -Eq '^ Ranks    4 of 4: 4 alive' "$work/once.txt" || { echo "FAIL: summary" >&2; exit 1; }
grep -Eq 'HANG\? .*behind on [0-9a-f]{8} #3: rank 3 \(#2\)' "$work/once.txt" ||
  { echo "FAIL: no hang banner naming rank 3" >&2; exit 1; }
[[ $code == 3 ]] || { echo "FAIL: exit code $code with the banner up, expected 3" >&2; exit 1; }
echo "ok: the job's ranks through the agent"

CXXRUN_TOKEN=wrong "$top" --once --connect "$endpoint" > /dev/null 2> "$work/wrong.err"
code=$?
cat "$work/wrong.err"
[[ $code == 1 ]] || { echo "FAIL: exit code $code with a wrong token, expected 1" >&2; exit 1; }
grep -q "^ncclrec-top: agent $endpoint: wrong job token$" "$work/wrong.err" ||
  { echo "FAIL: the wrong token is not said" >&2; exit 1; }
echo "ok: a wrong token is refused"

kill -TERM "$job"
wait "$job"
code=$?
job=
[[ $code == 143 ]] || { cat "$work/err.log" >&2; echo "FAIL: cxxrun exit $code after SIGTERM" >&2; exit 1; }
echo PASS
