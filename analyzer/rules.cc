// The verdict order. Read it top-down: each rule sees only recordings that no rule above it
// explained, so a rule whose verdict is a cause comes before the rules that would take its
// symptoms for the verdict (docs/analyzer.md, "cause before symptom, deviant before victim").
#include "analyzer/rules.h"

#include <utility>

#include "analyzer/rules/alignment.h"
#include "analyzer/rules/all_wait_in_one_op.h"
#include "analyzer/rules/comm_creation.h"
#include "analyzer/rules/device_collision.h"
#include "analyzer/rules/device_stalled.h"
#include "analyzer/rules/early_comm_end.h"
#include "analyzer/rules/failed_call.h"
#include "analyzer/rules/gated_at_the_end.h"
#include "analyzer/rules/group_peer_skip.h"
#include "analyzer/rules/lone_collective.h"
#include "analyzer/rules/no_hang.h"
#include "analyzer/rules/node_unreachable.h"
#include "analyzer/rules/p2p_mismatch.h"
#include "analyzer/rules/p2p_stop.h"
#include "analyzer/rules/partial_split.h"
#include "analyzer/rules/rank_not_running.h"
#include "analyzer/rules/slow_rank.h"
#include "analyzer/rules/stuck_creating_comm.h"
#include "analyzer/rules/transport_stalled.h"
#include "analyzer/rules/wait_cycle.h"

namespace ncclrec::analyzer::engine {
namespace {

// A finder that reads the recordings only (set, call sites) as a rule.
template <std::optional<Verdict> (*find)(const format::LoadedSet&, const CallSites&)>
std::optional<Verdict> onRecordings(const Engine& en, Inferred&) {
  return find(en.set(), en.callsites());
}

// A rule that only reads the engine's facts (a pure function of them), inferring nothing.
template <std::optional<Verdict> (*find)(const Engine&)>
std::optional<Verdict> asRule(const Engine& en, Inferred&) {
  return find(en);
}

// The cause steps each rule's verdict is offered to, in order (rules.h, Explainer).
constexpr Explainer kEarlierDivergence[] = {&earlierDivergence};
// An unmatched send or receive: the rank that left behind it, else a collective that holds its
// peer up, else a collective its sender skipped before going into it.
constexpr Explainer kP2pWaitCauses[] = {&leaverBehindP2pWait, &collectiveBehindP2pWait,
                                        &skipBehindP2pWait};

constexpr NamedRule kRules[] = {
    // A refused init (ranks sharing a device) explains whatever follows it.
    {"device_collision", &onRecordings<&findDeviceCollision>},
    // A communicator whose creation does not finish (rules/comm_creation.h): the ranks in the
    // creation wait for a member that is elsewhere, for an id that cannot fill, with arguments
    // that disagree, or on a bootstrap that cannot connect. From any other communicator those
    // ranks look like ranks that stopped in host code.
    {"comm_creation", &asRule<&findCreationHang>},
    // Calls around the slots (rules/comm_calls.h): a communicator ended or split by some ranks
    // only, or a peer left out of a grouped exchange. The ranks that wait would otherwise take
    // the blame for them.
    // A collective on a communicator the others never used (they destroyed it when done) comes
    // before the early end it would otherwise look like.
    {"lone_collective", &onRecordings<&findLoneCollective>},
    // A collective a minority issued at a new call site past the others' end of a communicator,
    // when the others are done with it (ended it, exited, or wait elsewhere):
    // rank_gated_collective,
    // before the early end or stop of the ranks that finished normally it would otherwise look like
    // (rules/gated_at_the_end.h).
    {"gated_at_the_end", &asRule<&findGatedAtTheEnd>},
    {"early_comm_end", &onRecordings<&findEarlyCommEnd>},
    {"partial_split", &onRecordings<&findPartialSplit>},
    {"group_peer_skip", &asRule<&findGroupPeerSkip>},
    // Waits that pair by peer or span communicators, before the per-slot alignment: a rank
    // blocked in comm B looks, from comm A, like a rank that stopped.
    {"wait_cycle", &asRule<&findWaitCycle>, kEarlierDivergence},
    // Before p2p_mismatch: a peer that left NCCL without posting the counterpart stopped (a
    // truncation); it did not post a different op.
    {"p2p_stop", &findP2pStop},
    {"p2p_mismatch", &asRule<&findP2pMismatch>, kP2pWaitCauses},
    // The per-slot alignment: first the communicators with ops pending that disagree, then the
    // first divergence or stop anywhere.
    // Every rank runs and waits in the same call, but one rank's GPU never started the op's
    // kernel (or never finished it while its data arrived): rules/device_stalled.h. Before
    // transport_stalled: the senders' steps to a receiver whose kernel never runs stay
    // unconsumed, the symptom.
    {"device_stalled", &asRule<&findDeviceStalled>},
    // Every rank runs and waits in the same call, but a connection stopped moving data: the
    // sender's transport counters are ahead of its receiver's (rules/transport_stalled.h). Before
    // the alignment, to which ranks straddling two ops of one ring look like a stop.
    {"transport_stalled", &asRule<&findTransportStalled>},
    // Every rank read runs and waits in one op, for ranks of a node node 0 could no longer hear
    // from (the launcher's fact; rules/node_unreachable.h): that node, or the network to it,
    // stopped. Before the alignment, to which ranks straddling two ops of one ring look like a
    // stop.
    {"node_unreachable", &asRule<&findNodeUnreachable>},
    {"pending_divergence", &pendingDivergence},
    {"divergence_or_stop", &firstDivergenceOrStop, kEarlierDivergence},
    // Nothing disagrees and no stream stopped while others wait: every rank entered the same op,
    // and one of them stopped running inside it (rules/rank_not_running.h).
    {"rank_not_running", &asRule<&findRankNotRunning>},
    // When no stream shows a divergence or a stop (rules/failed_call.h, ...): a failed call, a
    // communicator never created, a slow rank, no hang at all, or every rank in one op.
    {"failed_call", &asRule<&findFailedCall>},
    {"stuck_creating_comm", &asRule<&findStuckCreatingComm>},
    {"slow_rank", &asRule<&findSlowRankWhenNothingPends>},
    {"no_hang", &asRule<&findNoHang>},
    {"all_wait_in_one_op", &asRule<&findAllWaitInOneOp>},
};

}  // namespace

std::span<const NamedRule> verdictRules() { return kRules; }

Verdict runRules(const Engine& engine) {
  Inferred inferred;
  for (const NamedRule& rule : verdictRules()) {
    if (std::optional<Verdict> v = rule.find(engine, inferred)) {
      for (const Explainer explain : rule.causes) {
        if (explain(engine, inferred, *v)) break;
      }
      engine.addStatus(*v, inferred);
      return std::move(*v);
    }
  }
  // Unreachable: all_wait_in_one_op always decides.
  Verdict v;
  engine.addStatus(v, inferred);
  return v;
}

}  // namespace ncclrec::analyzer::engine
