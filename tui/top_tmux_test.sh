#!/usr/bin/env bash
# ncclrec-top in a real terminal: tmux (80x24) runs it on a live hostnccl job under
# libncclrec.so (4 ranks; rank 3 sleeps in host code, ranks 0-2 wait in all-reduce #3), and keys
# are sent as a user would. Checks the summary and the hang banner, Enter (rank detail), Esc, ?
# (help), Tab (grid), a resize, q (exit 0, terminal restored), and SIGTERM (exit 143, terminal
# restored).
#   top_tmux_test.sh NCCLREC_TOP SCENARIO_BIN SHIM HOSTNCCL_DIR
# Exit status: 0 pass, 1 fail, 2 bad usage, 77 skipped (tmux is not installed).
set -uo pipefail
if [[ $# -ne 4 ]]; then
  echo "usage: $0 NCCLREC_TOP SCENARIO_BIN SHIM HOSTNCCL_DIR" >&2
  exit 2
fi
top=$1 scenario=$2 shim=$3 hostnccl=$4
if ! command -v tmux > /dev/null; then
  echo "SKIP: tmux is not installed (apt-get install tmux)"
  exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ncclrec-top-tmux-XXXXXX")
sock=$work/tmux.sock
tmuxc() { tmux -S "$sock" -f /dev/null "$@"; }
pids=()
cleanup() {
  tmuxc kill-server 2> /dev/null
  for p in "${pids[@]}"; do kill -9 "$p" 2> /dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2> /dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $1" >&2
  echo "--- screen:" >&2
  tmuxc capture-pane -p -t top >&2
  exit 1
}

dumps=$work/dumps
for r in 0 1 2 3; do
  RANK=$r WORLD_SIZE=4 LD_PRELOAD=$shim LD_LIBRARY_PATH=$hostnccl NCCLREC_DIR=$dumps \
    NCCLREC_RUN_ID=tmux-test NCCLREC_TIMEOUT=600 NCCLREC_SAMPLE_ID_FILE=$work/id \
    "$scenario" stuck_in_host 6 2 3 > "$work/rank$r.log" 2>&1 &
  pids+=($!)
done
# Until ranks 0-2 wait in #3 (ncclrec-top --once itself says so).
for ((i = 0; i < 300; i++)); do
  "$top" --once --size 80x24 "$dumps" > "$work/once.txt" 2> /dev/null
  [[ $(grep -c 'AllReduce #3 .*enqueued' "$work/once.txt") == 3 ]] && break
  sleep 0.1
done
[[ $(grep -c 'AllReduce #3 .*enqueued' "$work/once.txt") == 3 ]] || {
  cat "$work/once.txt" "$work"/rank*.log >&2
  echo "FAIL: the job did not reach its hang" >&2
  exit 1
}

screen() { tmuxc capture-pane -p -t top; }
# Waits up to 10 s for REGEX on the screen.
expect() {
  for ((i = 0; i < 100; i++)); do
    screen | grep -Eq -- "$1" && return 0
    sleep 0.1
  done
  fail "expected /$1/ on the screen"
}
keys() { tmuxc send-keys -t top "$@"; }

tmuxc new-session -d -s top -x 80 -y 24 "env -i PATH=$PATH HOME=$work HISTFILE=/dev/null TERM=screen bash --norc --noprofile"
keys "stty -g > $work/stty.before; $top --interval 0.2 --hang-after 1 $dumps; echo TOP-EXIT=\$?; stty -g > $work/stty.after" Enter

expect '^ Ranks    4 of 4: 4 alive, 0 exited, 0 crashed'
expect 'HANG\? no progress for .*; behind on [0-9a-f]{8} #3: rank 3 \(#2\)'
[[ $(tmuxc display -p -t top '#{alternate_on}') == 1 ]] || fail "not on the alternate screen"
[[ $(screen | wc -l) == 24 ]] || fail "the frame is not 24 lines"
screen | tail -1 | grep -q 'Up/Down select' || fail "key hints are not on the last line"
echo "ok: summary and hang banner"

keys Down Down Down Enter
expect '^ rank 3 .*world 4  host '
expect 'Last call: AllReduce #2'
expect 'Last calls, newest first'
echo "ok: Enter opens rank 3's detail"
# 't': every rank takes a thread snapshot into its black box (no dump); the detail lists rank 3's
# threads, its main thread (tid = pid) first.
keys t
expect 'asked 4 running ranks for a thread snapshot'
expect '^ Threads [0-9.ms]+ ago \(taken on request\), [0-9]+ threads, [0-9]+ answered'
expect "^ +${pids[3]} ncclrec_scenari +[RS] "
[[ -f $dumps/ncclrec.snapshot ]] || fail "no request file"
compgen -G "$dumps/*.ncclrec.pb" > /dev/null && fail "a snapshot request made a dump"
echo "ok: t lists rank 3's threads from a fresh snapshot, no dump"
keys Escape
expect '^ Ranks    4 of 4'
keys '?'
expect '^ Keys'
expect 'this help; any key closes it'
keys x
expect '^ Ranks    4 of 4'
echo "ok: Esc and ? (help)"
keys Tab
expect 'rows: lagging first'
expect '^>      3    3      2 ##\.'
echo "ok: Tab shows the grid, lagging rank first"

tmuxc resize-window -t top -x 100 -y 30
for ((i = 0; i < 50; i++)); do
  [[ $(screen | wc -l) == 30 ]] && screen | tail -1 | grep -q 'Left/Right comm' && break
  sleep 0.1
done
screen | tail -1 | grep -q 'Left/Right comm' || fail "no redraw at 100x30"
screen | head -2 | tail -1 | grep -q 'rows: lagging first *$' || fail "tabs line not 100 wide"
echo "ok: resize"

keys q
expect '^TOP-EXIT=0'
[[ $(tmuxc display -p -t top '#{alternate_on}') == 0 ]] || fail "still on the alternate screen"
cmp -s "$work/stty.before" "$work/stty.after" || fail "terminal modes not restored after q"
echo "ok: q exits 0 and restores the terminal"

keys "clear; $top --interval 0.2 $dumps; echo TOP-EXIT=\$?; stty -g > $work/stty.after" Enter
expect '^ Ranks    4 of 4'
shell=$(tmuxc display -p -t top '#{pane_pid}')
toppid=$(pgrep -P "$shell" -x ncclrec-top)
[[ -n $toppid ]] || fail "cannot find ncclrec-top's pid"
kill -TERM "$toppid"
expect '^TOP-EXIT=143'
[[ $(tmuxc display -p -t top '#{alternate_on}') == 0 ]] || fail "still on the alternate screen"
cmp -s "$work/stty.before" "$work/stty.after" || fail "terminal modes not restored after SIGTERM"
echo "ok: SIGTERM exits 143 and restores the terminal"
echo PASS
