// Internal to the analyzer: the alignment engine behind diagnose() (diagnose.h), split by concern
// over diagnose.cc (streams, the scan for the first divergence), divergence.cc (insertion,
// deletion, substitution), truncation.cc (a stream that stopped) and evidence.cc (the evidence
// table and each rank's status). Not for use outside analyzer/.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyzer/callsite.h"
#include "analyzer/diagnose.h"
#include "analyzer/verdict.h"
#include "recorder/format/nccl_result.h"
#include "recorder/format/reader.h"

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

struct Op {
  const EventRecord* e = nullptr;
  uint32_t key = 0;   // (op, call site, shape): equal keys pair cleanly
  uint32_t site = 0;  // (op, call site): what "this collective" means when telling new from known
  uint32_t loc = 0;   // the call site alone
};

struct Stream {
  size_t rank = 0;  // index into LoadedSet::ranks
  std::vector<Op> ops;
};

struct CommStreams {
  uint64_t comm_id = 0;
  std::vector<Stream> streams;  // one per process holding the communicator
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

inline bool isIncomplete(const EventRecord& e) {
  return e.state == EventState::kEnqueued || e.state == EventState::kStarted;
}

// A call NCCL refused before issuing it (bad argument or usage) never pairs with anything; one
// that failed after issuing (a peer vanished, a system error) holds its slot in the stream.
using format::kNcclInvalidArgument;
using format::kNcclInvalidUsage;
using format::kNcclRemoteError;
using format::kNcclSystemError;
inline bool rejected(const EventRecord& e) {
  return e.state == EventState::kFailed &&
         (e.result == kNcclInvalidArgument || e.result == kNcclInvalidUsage);
}

// An op the job is stuck in or stopped at.
inline bool unfinished(const EventRecord& e) {
  return isIncomplete(e) || e.state == EventState::kFailed;
}

using format::hasRoot;

inline std::string hex8(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return std::string(buf, 8);
}

inline std::string seconds(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1fs", static_cast<double>(ns) / 1e9);
  return buf;
}

inline std::string signalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? "SIG" + std::string(abbrev) : "signal " + std::to_string(sig);
}

// "all-reduce", for "after 99 all-reduces".
inline std::string opNoun(OpType op) {
  switch (op) {
    case OpType::kAllReduce:
      return "all-reduce";
    case OpType::kBroadcast:
    case OpType::kBcast:
      return "broadcast";
    case OpType::kReduce:
      return "reduce";
    case OpType::kAllGather:
      return "all-gather";
    case OpType::kReduceScatter:
      return "reduce-scatter";
    case OpType::kAlltoAll:
      return "all-to-all";
    case OpType::kGather:
      return "gather";
    case OpType::kScatter:
      return "scatter";
    default:
      return std::string(format::opName(op));
  }
}

inline std::string ordinal(uint64_t n) {
  const uint64_t mod100 = n % 100;
  const char* suffix = "th";
  if (mod100 < 11 || mod100 > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

// The classes of a divergence between ranks' streams on one communicator (not a truncation).
inline bool isDivergence(VerdictClass c) {
  switch (c) {
    case VerdictClass::kRankGatedCollective:
    case VerdictClass::kSkippedCollective:
    case VerdictClass::kOpMismatch:
    case VerdictClass::kSizeMismatch:
    case VerdictClass::kDtypeMismatch:
    case VerdictClass::kRedopMismatch:
    case VerdictClass::kRootMismatch:
      return true;
    default:
      return false;
  }
}

// "rank == 0", "rank in {0,2}", "rank != 3".
inline std::string subsetCondition(const std::vector<int>& subset, const std::vector<int>& all) {
  if (subset.size() == 1) return "rank == " + std::to_string(subset[0]);
  std::vector<int> rest;
  std::set_difference(all.begin(), all.end(), subset.begin(), subset.end(),
                      std::back_inserter(rest));
  if (rest.size() == 1) return "rank != " + std::to_string(rest[0]);
  return "rank in {" + formatRanks(subset) + "}";
}

// The single edit of one rank's stream that explains a slot where ranks issued different ops.
enum class Edit { kNone, kInsertion, kDeletion, kSubstitution };

class Engine {
 public:
  Engine(const format::LoadedSet& set, const DiagnoseOptions& options, const CallSites& callsites)
      : set_(set), options_(options), callsites_(callsites) {}

  Verdict run();

 private:
  struct Group {
    uint32_t key = 0;
    std::vector<size_t> streams;  // indices into CommStreams::streams
    std::vector<int> ranks;       // their global ranks, ascending
  };

  void buildStreams();
  // The call site, with names borrowed from other ranks' dumps when this rank has none.
  CallSite siteAt(const RankData& rank, const EventRecord& e) const {
    return callSiteOf(rank, e, callsites_);
  }
  uint32_t siteOf(size_t rank, const EventRecord& e);
  int globalRank(size_t rank) const { return set_.ranks[rank].global_rank; }
  bool dead(size_t rank) const;
  int64_t lastSignOfLife(size_t rank) const;

  // The first divergence on `c` from position `start` on; fills `v` and returns true when found.
  bool diagnoseComm(const CommStreams& c, Verdict& v);
  bool classifyKeyDivergence(const CommStreams& c, size_t p, const std::vector<Group>& groups,
                             Verdict& v);
  // A rank's newest collective or p2p call still pending (nullptr when none), and its newest one.
  std::pair<const EventRecord*, const EventRecord*> lastOps(const RankData& rd) const;
  // "its last NCCL op (ncclBroadcast #2 from main() main.cc:52) completed 2.3s ago".
  std::string lastOpPhrase(const RankData& rd, const EventRecord* last) const;
  // For a rank blocked in collective `pending`: "; there it waits for rank 3, in host code: its
  // last NCCL op
  // ..." (the ranks of that communicator that have not issued it; how the one rank is, if one).
  std::string waitsThereFor(const EventRecord& pending, size_t self) const;
  // A send or receive waiting for a rank that left NCCL without posting its counterpart (stuck
  // in host code, killed, exited early): that rank's stop is the verdict (p2p_stop.cc). Fills `v`
  // and returns true when found.
  bool findP2pStop(Verdict& v);
  void classifyTruncation(const CommStreams& c, size_t p, const std::vector<size_t>& ended,
                          const std::vector<size_t>& going, Verdict& v);
  std::optional<uint32_t> predictNext(const Stream& s, size_t p) const;
  // The edit at slot p of the deviant stream `ds` against the normal `ns` when the streams stop
  // before they line up again (divergence.cc).
  Edit judgeByHistory(const Stream& ns, const Stream& ds, size_t p, bool d_known, bool other_args,
                      bool same_function) const;
  bool knownSite(const CommStreams& c, size_t p, uint32_t site,
                 const std::vector<size_t>& other_streams) const;
  bool shiftedByOne(const CommStreams& c, size_t p, const std::vector<size_t>& going,
                    const std::vector<int>& ahead) const;

  // Root cause across communicators and time (root_cause.cc): when `v` is a symptom (a stream
  // that stopped, a wait cycle) and another communicator's alignment shows an earlier insertion,
  // deletion or substitution by the same ranks, that divergence becomes the verdict and `v` its
  // evidence (the divergent op issued before the rank's newest call: causal order, not clocks).
  // Needs buildStreams(). Returns whether it replaced `v`.
  bool preferEarlierCause(Verdict& v);
  // For `v`, a send or receive that waits for its peer: when a communicator with ops pending
  // shows a divergence (insertion, deletion, substitution), that is the cause (the peer is held
  // up by it) and `v` its evidence. Needs buildStreams(). Returns whether it replaced `v`.
  bool collectiveCauseOfP2pWait(Verdict& v);
  // Whether the only ops pending on `c` are one new collective (a call site `c` never issued)
  // that some ranks issued past the end of every other rank's stream: fills `v` with
  // rank_gated_collective naming them.
  bool aloneAtTheEnd(const CommStreams& c, Verdict& v) const;
  // The earliest enqueue time of op `seq` of `comm` on any rank; INT64_MAX when none.
  int64_t opTime(uint64_t comm, uint64_t seq) const;
  // Whether the rank issued collective `seq` of `comm` before its newest call.
  bool issuedBeforeItsLast(int global_rank, uint64_t comm, uint64_t seq) const;

  // Ranks that left (leavers.cc). Whether the rank's newest call failed because a peer was gone
  // (a remote or system error): it stopped because of another rank.
  bool reacted(size_t rank) const;
  // Whether a black box with no exit mark is gone: a peer's send or receive to it failed with a
  // remote or system error (the transport lost it; SIGKILL leaves no mark).
  bool vanished(size_t rank) const;
  // Whether the rank exited, crashed or died with nothing of its own pending or failed.
  bool leftOnItsOwn(size_t rank) const;
  bool anyLeftOnItsOwn() const;
  // For `failed`, a call that failed because a peer was gone: the first rank holding its
  // communicator that left on its own is the verdict (rank_exited or rank_crashed).
  bool leaverExplains(const EventRecord& failed, Verdict& v) const;

  void addEvidence(const CommStreams& c, size_t p, Verdict& v) const;
  void addStatus(Verdict& v) const;
  std::vector<int> ranksOf(const CommStreams& c, const std::vector<size_t>& streams) const;

  const format::LoadedSet& set_;
  const DiagnoseOptions& options_;
  const CallSites& callsites_;  // the rule and the names, learnt from every rank of set_
  int64_t now_ = 0;
  int64_t latest_exit_ns_ = 0;
  std::set<size_t> inferred_dead_;  // ranks found dead from their peers' errors
  std::vector<CommStreams> comms_;
  std::vector<std::unordered_map<uint32_t, uint32_t>> site_cache_;  // per rank: stack id -> site
  std::map<std::pair<OpType, std::string>, uint32_t> sites_;
  std::vector<uint32_t> loc_of_site_;
  std::map<std::string, uint32_t> locs_;
  std::unordered_map<ShapeKey, uint32_t, ShapeKeyHash> keys_;
  std::vector<size_t> start_;  // per comm: the first position every stream holds
};

}  // namespace ncclrec::analyzer::engine
