# Sourced by the tests of this folder: two hosts of one job on this machine, network namespaces
# $a and $b joined by a veth pair ($net.1 in $a, $net.2 in $b), a work directory $work, and a
# cleanup on exit that kills what runs in the namespaces and removes them (NCCLREC_TEST_KEEP=DIR:
# $work is copied under DIR first, tests/tools/keep_work.sh). Exits 77 (skipped, with
# the reason) without root or without `ip`. Traffic stays inside the two namespaces.
#   TAG=ncr SUBNET=77 . two_hosts.sh     (namespaces "${TAG}$$a"/"b", addresses 10.SUBNET.x.1/2)
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: network namespaces need root (ip netns add); run as root to test two hosts"
  exit 77
fi
command -v ip > /dev/null || { echo "SKIP: no 'ip' command (Debian: iproute2)"; exit 77; }

tag="${TAG}$$"
a="${tag}a" b="${tag}b"
net="10.${SUBNET}.$(( $$ % 250 + 1 ))"
work=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/../tools/keep_work.sh"  # NCCLREC_TEST_KEEP=DIR keeps $work
cleanup() {
  for ns in "$a" "$b"; do
    ip netns pids "$ns" 2> /dev/null | xargs -r kill -9 2> /dev/null
    ip netns del "$ns" 2> /dev/null
  done
  keep_work "$work"
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.err; do echo "--- $f"; tail -40 "$f"; done; exit 1; }

ip netns add "$a" && ip netns add "$b" || fail "cannot make network namespaces"
ip link add "${tag}va" type veth peer name "${tag}vb" || fail "cannot make a veth pair"
ip link set "${tag}va" netns "$a" && ip link set "${tag}vb" netns "$b" || fail "cannot move the veth"
ip -n "$a" addr add "$net.1/24" dev "${tag}va" && ip -n "$b" addr add "$net.2/24" dev "${tag}vb"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "${tag}va" up && ip -n "$b" link set "${tag}vb" up || fail "cannot bring the link up"
