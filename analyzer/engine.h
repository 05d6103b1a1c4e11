// Internal to the analyzer: the alignment engine behind diagnose() (diagnose.h), split by concern
// over diagnose.cc (streams, the scan for the first divergence), divergence.cc (insertion,
// deletion, substitution), truncation.cc (a stream that stopped), root_cause.cc (a divergence
// that explains a symptom), leavers.cc (ranks that left) and evidence.cc (the evidence table and
// each rank's status). The verdict rules that use it, and their order, are in rules.h. Not for
// use outside analyzer/.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyzer/callsite.h"
#include "analyzer/diagnose.h"
#include "analyzer/headlines.h"
#include "analyzer/headlines_blocked.h"
#include "analyzer/headlines_liveness.h"
#include "analyzer/phrases.h"
#include "analyzer/rank_ops.h"
#include "analyzer/verdict.h"
#include "analyzer/wait_graph.h"
#include "base/text.h"
#include "format/nccl_result.h"
#include "format/reader.h"

namespace ncclrec::analyzer::engine {

using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;

// The rows of the evidence table span this many ops before and after the divergence.
constexpr uint64_t kContextBefore = 2;
constexpr uint64_t kContextAfter = 2;
// The diff confirms an insertion, deletion or substitution on at most this many following ops.
constexpr size_t kDiffWindow = 64;
// A rank that skipped a collective may have skipped this many consecutive ones (one step's
// gradient buckets); deletion of a longer run is not inferred from the history.
constexpr size_t kSkippedRun = 16;
// Heartbeats come every NCCLREC_POLL_MS (200 ms by default): a rank whose last one is older than
// another rank's exit by more than this had stopped.
constexpr int64_t kExitMarginNs = 500'000'000;

// One per collective of every rank (200 million at 100,000 ranks x 2,000 entries), so packed: 12
// bytes, the pointer unaligned (x86-64 and AArch64 load it in one instruction either way).
struct __attribute__((packed)) Op {
  const EventRecord* e = nullptr;
  uint32_t key = 0;  // (op, call site, shape): equal keys pair cleanly
  // The key's (op, call site), what "this collective" means when telling new from known, is the
  // engine's opSite(); the call site alone its loc_of_site_[opSite()].
};
static_assert(sizeof(Op) == 12);

struct Stream {
  size_t rank = 0;  // index into LoadedSet::ranks
  std::vector<Op> ops;
};

struct CommStreams {
  uint64_t comm_id = 0;
  std::vector<Stream> streams;        // one per process holding the communicator
  int64_t pending_since = INT64_MAX;  // pendingSince(), found once the streams are built
};

struct ShapeKey {
  OpType op;
  uint32_t site;
  uint64_t count;
  int dtype, redop, root;
  bool operator==(const ShapeKey&) const = default;
};
struct ShapeKeyHash {
  size_t operator()(const ShapeKey& k) const {
    size_t h = static_cast<size_t>(k.op) * 0x9e3779b97f4a7c15ull;
    for (uint64_t v : {static_cast<uint64_t>(k.site), k.count, static_cast<uint64_t>(k.dtype),
                       static_cast<uint64_t>(k.redop), static_cast<uint64_t>(k.root)}) {
      h = (h ^ v) * 0x100000001b3ull;
    }
    return h;
  }
};

using format::hasRoot;
using format::kNcclInvalidArgument;
using format::kNcclInvalidUsage;
using format::kNcclRemoteError;
using format::kNcclSystemError;

// The single edit of one rank's stream that explains a slot where ranks issued different ops.
enum class Edit { kNone, kInsertion, kDeletion, kSubstitution };

// What the rules infer while they decide one verdict, beyond the facts the Engine holds: the
// ranks found dead from their peers' errors (a stream that stopped whose peers lost it, the end of
// a chain of waits, a peer of a send or receive that vanished). One per runRules(), handed to the
// rule that decides and to its cause steps, which add to it and read it back (a rank found dead
// on one communicator is dead on the next), and read by the status list ("its peers lost the
// connection to it"). The Engine stays the same for every rule: rules take it const.
struct Inferred {
  std::set<size_t> dead;  // indices into LoadedSet::ranks
};

// The facts every verdict rule (rules.h) reads: the recordings, each communicator's aligned
// streams (built once, at construction), which ranks are dead, and the building blocks the rules
// share (the scan of one communicator for its first divergence, the evidence table, the status
// list). One per diagnose() call, on the caller's thread.
class Engine {
 public:
  Engine(const format::LoadedSet& set, const DiagnoseOptions& options, const CallSites& callsites);

  const format::LoadedSet& set() const { return set_; }
  const CallSites& callsites() const { return callsites_; }
  // The newest snapshot time of the job (heartbeat or dump), the "now" of its durations.
  int64_t now() const { return now_; }
  const std::vector<CommStreams>& comms() const { return comms_; }
  // comms() in the order the alignment looks at them: communicators with ops pending first (that
  // is where the job hangs), one whose pending op waits for a rank blocked in another after that
  // other, then by the enqueue time of their oldest pending op.
  const std::vector<const CommStreams*>& commOrder() const { return order_; }
  // The first of commOrder() with an op pending; nullptr when nothing is pending.
  const CommStreams* firstPending() const;

  // The call site, with names borrowed from other ranks' dumps when this rank has none.
  CallSite siteAt(const RankData& rank, const EventRecord& e) const {
    return callSiteOf(rank, e, callsites_);
  }
  int globalRank(size_t rank) const { return set_.ranks[rank].global_rank; }
  // The (op, call site) of `o`'s key.
  uint32_t opSite(const Op& o) const { return site_of_key_[o.key]; }
  // Exited, crashed, or silent for long (a stale heartbeat) while the launcher did not see its
  // process still there; with `inferred`, also found dead by its peers (Inferred::dead).
  bool dead(size_t rank) const;
  bool dead(size_t rank, const Inferred& inferred) const {
    return inferred.dead.contains(rank) || dead(rank);
  }
  // A black box whose heartbeat is older than the newest recording by more than
  // --stale-heartbeat: its watchdog thread stopped beating (killed, or not running).
  bool staleHeartbeat(size_t rank) const;
  // Why the rank runs none of its code (headlines_liveness.h notRunningPhrase: "its process is
  // stopped (SIGSTOP...)"); nothing said() when nothing says so. From what the launcher saw of
  // its process (RankData::process_state: stopped, traced, in uninterruptible sleep), else from
  // the rank's own thread snapshot at its dump: the thread that calls NCCL in uninterruptible
  // sleep (a vfork, a driver, a filesystem).
  NotRunning whyNotRunning(size_t rank) const;
  bool notRunning(size_t rank) const { return whyNotRunning(rank).said(); }
  int64_t lastSignOfLife(size_t rank) const;
  // The job's wait-for graph (wait_graph.h): who waits in which call for whom, and how each rank
  // stands by dead() and whyNotRunning(). Built by the first call (most analyses that a rule
  // before the wait cycle decides never need it), then the same for every rule.
  const WaitGraph& waits() const;
  std::vector<int> ranksOf(const CommStreams& c, const std::vector<size_t>& streams) const;
  // The ranks of the job (0 .. world size - 1) with no black box or dump, ascending.
  std::vector<int> ranksWithNoData() const;

  // The first divergence on `c` (an insertion, deletion or substitution) or stream that stopped
  // while others wait for it (a truncation, which may add its ranks to inferred.dead); fills `v`
  // and returns true when found, leaves `v` alone otherwise.
  bool diagnoseComm(const CommStreams& c, Verdict& v, Inferred& inferred) const;
  // diagnoseComm()'s verdict on `c` when it is a divergence (isDivergence); else nullopt, with
  // `inferred` left as it was.
  std::optional<Verdict> divergenceOn(const CommStreams& c, Inferred& inferred) const;
  // `last`, the rank's newest collective or p2p call (newestCommOp), as a headline tells it
  // (headlines.h lastOpPhrase): "its last NCCL op (ncclBroadcast #2 from main() main.cc:52)
  // completed 2.3s ago".
  LastOp lastOp(const RankData& rd, const EventRecord* last) const;

  // Root cause across communicators and time (root_cause.cc): when `v` is a symptom (a stream
  // that stopped, a wait cycle) and another communicator's alignment shows an earlier insertion,
  // deletion or substitution by the same ranks, that divergence becomes the verdict and `v` its
  // evidence (the divergent op issued before the rank's newest call: causal order, not clocks);
  // so does a new collective those ranks alone issued first on a communicator whose other
  // members are blocked elsewhere (aloneAtTheEnd), where they are held. Returns whether it
  // replaced `v`.
  bool preferEarlierCause(Verdict& v, Inferred& inferred) const;
  // For `v`, a send or receive that waits for its peer: when a communicator with ops pending
  // shows a divergence (insertion, deletion, substitution), that is the cause (the peer is held
  // up by it) and `v` its evidence. Returns whether it replaced `v`.
  bool collectiveCauseOfP2pWait(Verdict& v, Inferred& inferred) const;

  // Ranks that left (leavers.cc). Whether the rank's newest call failed because a peer was gone
  // (a remote or system error): it stopped because of another rank.
  bool reacted(size_t rank) const;
  // Whether a black box with no exit mark is gone: a peer's send or receive to it failed with a
  // remote or system error (the transport lost it; SIGKILL leaves no mark).
  bool vanished(size_t rank) const;
  // Whether the rank exited, crashed or died with nothing of its own pending or failed.
  bool leftOnItsOwn(size_t rank, const Inferred& inferred) const;
  bool anyLeftOnItsOwn(const Inferred& inferred) const;
  // For `failed`, a call that failed because a peer was gone: the first rank holding its
  // communicator that left on its own is the verdict (rank_exited or rank_crashed). With none,
  // a rank holding it that left after its own call failed so is followed to the rank it lost, and
  // so on, across communicators: the rank that left first, on its own, is the verdict.
  bool leaverExplains(const EventRecord& failed, Verdict& v, const Inferred& inferred) const;
  // A rank that exited after its newest calls failed because a peer was gone (truncation.cc):
  // when a rank that left on its own explains one of those failures, that is the verdict.
  bool exitedOnALostPeer(const RankData& rd, Verdict& v, const Inferred& inferred) const;

  // The evidence table of `c` around slot `p` (evidence.cc); a rank's row says how it stopped,
  // dead by `inferred` too.
  void addEvidence(const CommStreams& c, size_t p, Verdict& v) const {
    addEvidence(c, p, v, Inferred{});
  }
  void addEvidence(const CommStreams& c, size_t p, Verdict& v, const Inferred& inferred) const;
  // Each rank's status (evidence.cc), once the verdict is decided with `inferred`.
  void addStatus(Verdict& v, const Inferred& inferred) const;

 private:
  struct Group {
    uint32_t key = 0;
    std::vector<size_t> streams;  // indices into CommStreams::streams
    std::vector<int> ranks;       // their global ranks, ascending
  };

  void buildStreams();
  void orderComms();
  uint32_t siteOf(size_t rank, const EventRecord& e);

  // diagnoseComm's slot `p` (diagnose.cc): the groups of streams issuing the same op there, the
  // streams that ended before it and those that go on.
  void groupsAt(const CommStreams& c, size_t p, std::vector<Group>& groups,
                std::vector<size_t>& ended, std::vector<size_t>& going) const;
  // diagnoseComm's streams that `ended` before slot `p` while the `going` ones wait there: the
  // earlier `candidate` insertion when it explains the stop, else the truncation; false when the
  // ranks that stopped only reacted to another's departure seen elsewhere.
  bool stoppedAt(const CommStreams& c, size_t p, const std::vector<size_t>& ended,
                 const std::vector<size_t>& going, std::optional<Verdict>& candidate, Verdict& v,
                 Inferred& inferred) const;
  bool classifyKeyDivergence(const CommStreams& c, size_t p, const std::vector<Group>& groups,
                             Verdict& v) const;
  // The group at slot `p` that behaves as the history predicts (normal) and the one that deviates
  // (the smallest, then the one with the lowest rank); (*known)[g]: group g's call site is one
  // the other groups issued before (divergence.cc).
  std::pair<size_t, size_t> normalAndDeviant(const CommStreams& c, size_t p,
                                             const std::vector<Group>& groups,
                                             std::vector<bool>* known) const;
  // For a rank blocked in collective `pending`: the ranks of that communicator that have not
  // issued it and how the one rank is, if one (headlines_blocked.h thereWaitsForPhrase: "; there
  // it waits for rank 3, in host code: its last NCCL op ...").
  ThereWaitsFor waitsThereFor(const EventRecord& pending, size_t self,
                              const Inferred& inferred) const;
  // Where the first waiters of a chain of waits are: `waiters` wait for `waited` in `in`.
  struct OuterWait {
    std::vector<int> waiters, waited;
    OpOn in;
  };
  // A chain of waits (truncation.cc): stream rank `self` is blocked in `pending` on another
  // communicator than the one where `outer` ("ranks 0,2 wait for rank 1 in ...") wait for it.
  // When the chain ends at one rank that stopped (exited, crashed, alive in host code) and had
  // issued that call site there before, that rank is the culprit and the ranks on the chain wait
  // (cause before symptom): fills `v` and returns true.
  bool blameChainEnd(size_t self, const EventRecord& pending, const OuterWait& outer, Verdict& v,
                     Inferred& inferred) const;
  // Several streams stopped alike, each rank blocked on another communicator: when the chain
  // behind every one of them names the same rank (its end, or the rank the ranks at its ends
  // left because of), that rank is the verdict, as blameChainEnd gives it for the first.
  bool oneEndBehindAll(const CommStreams& c, const std::vector<size_t>& culprits,
                       const OuterWait& outer, Verdict& v, Inferred& inferred) const;
  // The rank where the chain from `self`, blocked in `at`, ends: one that stopped (exited,
  // crashed, or in no NCCL op) and that every branch leads to (a link may wait for several ranks,
  // blocked in turn for that one; a rank in an unfinished group waits in each op of the group a
  // peer has not issued); nullopt when two ranks stopped, a link waits for a new call site, or a
  // branch comes back (a cycle). `at` becomes the op the last link waits in; `links`
  // gets the links from `self` to it.
  std::optional<size_t> chainEnd(size_t self, const EventRecord*& at, std::vector<ChainStep>& links,
                                 const Inferred& inferred) const;
  // A rank chainEnd() reached: blocked in `op`, which node `parent` waits for (SIZE_MAX: none).
  struct ChainNode {
    size_t rank;
    const EventRecord* op;
    size_t parent;
    // One of several ops of the rank's unfinished group (pendingGroupOps): one that every peer
    // issued is not what holds the rank, and leads nowhere rather than breaking the chain.
    bool in_group = false;
  };
  // chainEnd's step from node `i`: appends the blocked ranks its op waits for to `nodes` and the
  // stopped ones to `stopped` (rank, i); false when the chain breaks (a new call site, a cycle, a
  // rank blocked on the same communicator, too many nodes).
  bool followChain(size_t i, std::vector<ChainNode>& nodes, std::set<size_t>& seen,
                   std::vector<std::pair<size_t, size_t>>& stopped, const Inferred& inferred) const;

  // leaverExplains and exitedOnALostPeer through `followed`, the ranks that left after reacting
  // already followed (each once: no cycle).
  bool leaverExplains(const EventRecord& failed, Verdict& v, const Inferred& inferred,
                      std::vector<size_t>& followed) const;
  bool exitedOnALostPeer(size_t rank, Verdict& v, const Inferred& inferred,
                         std::vector<size_t>& followed) const;

  // A stream that stopped before a slot others wait in (truncation.cc): the verdict names the
  // ranks that stopped first in the same way, in this order.
  enum class StopKind { kExited, kDied, kNotRunning, kAlive };
  struct Truncation;
  void classifyTruncation(const CommStreams& c, size_t p, const std::vector<size_t>& ended,
                          const std::vector<size_t>& going, Verdict& v, Inferred& inferred) const;
  StopKind stopKind(const CommStreams& c, size_t s, bool peers_lost_it,
                    const Inferred& inferred) const;
  // The `ended` streams that stopped first, all in the same way (*kind).
  std::vector<size_t> stoppedAlike(const CommStreams& c, size_t p, const std::vector<size_t>& ended,
                                   const std::vector<size_t>& going, StopKind* kind,
                                   const Inferred& inferred) const;
  // The process (index into LoadedSet::ranks) that is rank e.peer() of e's communicator;
  // nullopt when no recording shows it (WaitGraph::processOf).
  std::optional<size_t> peerProcess(const EventRecord& e) const {
    return waits().processOf(e.commId(), e.peer());
  }
  // Of several ranks alive and gone from `c`, those not merely waiting for another of them.
  std::vector<size_t> ownStops(const CommStreams& c, std::vector<size_t> alive,
                               const Inferred& inferred) const;
  // The stopped rank's own last call failed with an error of its own: nccl_error.
  bool failedOnItsOwnCall(const Truncation& t, Verdict& v) const;
  // The stopped ranks are alive: blocked elsewhere (or the end of a chain of waits), still inside
  // their newest op of the communicator, or in host code.
  void classifyAlive(const Truncation& t, Verdict& v) const;
  // The stopped ranks still wait in `pending`, their newest op of the communicator, which the
  // others got through: undecided (inside NCCL, not host code; the transport or the device).
  void stillInsideTheirOp(const Truncation& t, const EventRecord& pending, Verdict& v) const;
  // The edit at slot p of the deviant stream `ds` against the normal `ns` when the streams stop
  // before they line up again (divergence.cc).
  Edit judgeByHistory(const Stream& ns, const Stream& ds, size_t p, bool d_known, bool other_args,
                      bool same_function) const;
  bool knownSite(const CommStreams& c, size_t p, uint32_t site,
                 const std::vector<size_t>& other_streams) const;
  bool shiftedByOne(const CommStreams& c, size_t p, const std::vector<size_t>& going,
                    const std::vector<int>& ahead) const;

  // Whether the only ops pending on `c` are one new collective (a call site `c` never issued)
  // that some ranks, all alive, issued past the end of every other rank's stream: fills `v` with
  // rank_gated_collective naming them. At the first slot the members that issued no collective
  // there at all (blockedElsewhere()) count as ended before it when they outnumber the issuers,
  // or when the issuers are exactly `culprits`, the ranks a later verdict named (it is what holds
  // them).
  bool aloneAtTheEnd(const CommStreams& c, Verdict& v, const std::vector<int>& culprits = {}) const;
  // The global ranks, ascending, of the members of `c` (WaitGraph::members) that issued no
  // collective there, when every one of them is alive and blocked in an NCCL call elsewhere; empty
  // when there is none or one of them is not (it is gone, or in host code).
  std::vector<int> blockedElsewhere(const CommStreams& c) const;
  // The earliest enqueue time of op `seq` of `comm` on any rank; INT64_MAX when none.
  int64_t opTime(uint64_t comm, uint64_t seq) const;
  // Whether the rank issued collective `seq` of `comm` before its newest call.
  bool issuedBeforeItsLast(int global_rank, uint64_t comm, uint64_t seq) const;

  const format::LoadedSet& set_;
  const DiagnoseOptions& options_;
  const CallSites& callsites_;  // the rule and the names, learnt from every rank of set_
  int64_t now_ = 0;
  int64_t latest_exit_ns_ = 0;
  std::vector<CommStreams> comms_;
  std::vector<const CommStreams*> order_;                           // commOrder()
  std::vector<std::unordered_map<uint32_t, uint32_t>> site_cache_;  // per rank: stack id -> site
  // siteOf's last answer: consecutive events mostly share rank, stack and op.
  struct {
    size_t rank = SIZE_MAX;
    uint32_t key = 0, site = 0;
  } last_site_;
  std::map<std::pair<OpType, std::string>, uint32_t> sites_;
  std::vector<uint32_t> loc_of_site_;
  mutable std::optional<WaitGraph> waits_;  // waits(), a cache of the recordings' facts
  std::map<std::string, uint32_t> locs_;
  std::unordered_map<ShapeKey, uint32_t, ShapeKeyHash> keys_;
  std::vector<uint32_t> site_of_key_;  // opSite()
};

// `cause` becomes the verdict and `v`, the symptom it explains, one row of its evidence ("what
// followed", root_cause.cc).
void becomeCause(Verdict& v, Verdict cause);

// When `c` has an op pending, the earliest enqueue time of one; INT64_MAX when none. Found once
// per communicator when the engine is built (a rule may ask often; each scan reads every op).
inline int64_t pendingSince(const CommStreams& c) { return c.pending_since; }

}  // namespace ncclrec::analyzer::engine
