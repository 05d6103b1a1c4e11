# Sourced by the test scripts that record a job in a temporary directory they remove on exit
# (tests/scenarios/hostnccl_ranks.sh, tests/netns/two_hosts.sh):
#   keep_work DIR
# copies DIR to a new directory under $NCCLREC_TEST_KEEP, named after the running script, when
# that variable is set, with the command line and the HOSTNCCL_*/NCCLREC_* environment that made
# it in its command.txt, and says where on stderr; does nothing otherwise. For reading a failing
# test's recordings, and for comparing two analyzers on the recordings of the live tests:
#   NCCLREC_TEST_KEEP=/tmp/keep ctest -R scenario.live
#   for d in /tmp/keep/*/; do ncclrec-analyze "$d/dumps"; done
keep_work_command=("$0" "$@")  # the sourcing script's command line
keep_work() {
  [[ -n ${NCCLREC_TEST_KEEP:-} && -d $1 ]] || return 0
  local dest
  mkdir -p "$NCCLREC_TEST_KEEP" &&
    dest=$(mktemp -d "$NCCLREC_TEST_KEEP/$(basename "$0" .sh)-XXXXXX") &&
    cp -a "$1/." "$dest/" &&
    { printf '%q ' "${keep_work_command[@]}"; echo; env | grep -E '^(HOSTNCCL|NCCLREC)_' | sort; } \
      > "$dest/command.txt" &&
    echo "kept $1 in $dest (NCCLREC_TEST_KEEP)" >&2
  return 0
}
