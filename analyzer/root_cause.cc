// Root cause across communicators and time: "cause before symptom". A rank one op ahead on one
// communicator (an extra collective that paired with its partner's next one and completed) shows
// much later as a stream that stops or a wait cycle on another communicator; the earlier
// divergence by the same ranks is the verdict, the later stop its evidence.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>
#include <utility>

#include "analyzer/engine.h"
#include "analyzer/headlines.h"
#include "analyzer/rules.h"

namespace ncclrec::analyzer::engine {
namespace {

// Of several candidate causes, the one whose op was enqueued first.
void keepEarliest(std::optional<Verdict>& best, int64_t& best_at, Verdict cause, int64_t at) {
  if (best && at >= best_at) return;
  best = std::move(cause);
  best_at = at;
}

// A stop (a stream that ended, a rank blocked elsewhere or in host code, an error after which it
// stopped) or a verdict found from a wait cycle: what an earlier divergence can lead to.
bool isSymptom(const Verdict& v) {
  switch (v.cls) {
    case VerdictClass::kRankExited:
    case VerdictClass::kRankCrashed:
    case VerdictClass::kRankStuckInHost:
    case VerdictClass::kRankBlockedElsewhere:
    case VerdictClass::kNcclError:
      return true;
    default:
      return std::any_of(v.tables.begin(), v.tables.end(),
                         [](const EvidenceTable& t) { return t.title == "wait cycle"; });
  }
}

}  // namespace

void becomeCause(Verdict& v, Verdict cause) {
  EvidenceTable later;
  later.title = "what followed";
  later.columns = {"class", "ranks", "headline"};
  later.rows.push_back({TableCell::of(std::string(verdictClassName(v.cls))),
                        TableCell::of(formatRanks(v.ranks)), TableCell::of(v.headline)});
  later.marked.push_back(false);
  cause.tables.push_back(std::move(later));
  v = std::move(cause);
}

int64_t Engine::opTime(uint64_t comm, uint64_t seq) const {
  int64_t t = INT64_MAX;
  for (const CommStreams& c : comms_) {
    if (c.comm_id != comm) continue;
    for (const Stream& s : c.streams) {
      for (const Op& o : s.ops) {
        if (o.e->op_seq == seq && o.e->enqueueNs() > 0) t = std::min(t, o.e->enqueueNs());
      }
    }
  }
  return t;
}

bool Engine::issuedBeforeItsLast(int global_rank, uint64_t comm, uint64_t seq) const {
  for (const RankData& r : set_.ranks) {
    if (r.global_rank != global_rank) continue;
    size_t at = SIZE_MAX, last = 0;
    for (size_t i = 0; i < r.events.size(); ++i) {
      const EventRecord& e = r.events[i];
      if (!format::isCollective(e.op) && !format::isP2p(e.op)) continue;
      last = i;
      if (e.commId() == comm && e.op_seq == seq && format::isCollective(e.op)) at = i;
    }
    return at != SIZE_MAX && at < last;
  }
  return false;
}

bool Engine::preferEarlierCause(Verdict& v, Inferred& inferred) const {
  if (!isSymptom(v) || v.ranks.empty()) return false;
  std::optional<Verdict> best;
  int64_t best_at = INT64_MAX;
  for (const CommStreams& c : comms_) {
    Verdict cause;
    // What it finds dead on the way stays found, as for the communicators the rule looked at.
    const bool diverged = diagnoseComm(c, cause, inferred) && isDivergence(cause.cls);
    // Else a new collective the symptom's ranks alone issued first on a communicator whose other
    // members are blocked elsewhere: it is where they are held.
    if (!diverged) {
      cause = Verdict{};
      if (!aloneAtTheEnd(c, cause, v.ranks)) continue;
    }
    if (cause.comm_id == v.comm_id && cause.seq == v.seq) continue;  // the symptom itself
    // It explains the symptom only when it is the same ranks' doing.
    if (!std::includes(v.ranks.begin(), v.ranks.end(), cause.ranks.begin(), cause.ranks.end())) {
      continue;
    }
    // Causal order: on each of its ranks the divergent op came before where the rank stopped or
    // waits (its newest call; the lone collective is where it waits); clocks of different hosts
    // need not agree, so enqueue times only pick the earliest of several causes.
    if (diverged && !std::all_of(cause.ranks.begin(), cause.ranks.end(), [&](int r) {
          return issuedBeforeItsLast(r, cause.comm_id, cause.seq);
        })) {
      continue;
    }
    const int64_t at = opTime(cause.comm_id, cause.seq);
    keepEarliest(best, best_at, std::move(cause), at);
  }
  if (!best) return false;
  becomeCause(v, std::move(*best));
  return true;
}

bool Engine::aloneAtTheEnd(const CommStreams& c, Verdict& v,
                           const std::vector<int>& culprits) const {
  // The slot past every other stream's end, held by the streams with an op pending there.
  size_t p = SIZE_MAX;
  std::vector<size_t> going, ended;
  for (size_t s = 0; s < c.streams.size(); ++s) {
    const auto& ops = c.streams[s].ops;
    if (!ops.empty() && isIncomplete(*ops.back().e)) {
      if (p != SIZE_MAX && ops.size() - 1 != p) return false;
      p = ops.size() - 1;
      going.push_back(s);
    } else {
      ended.push_back(s);
    }
  }
  if (p == SIZE_MAX) return false;
  // A rank gone inside it stopped there (a truncation's verdict).
  for (size_t s : going) {
    if (waits().gone(c.streams[s].rank)) return false;
  }
  // At the first slot, the members that issued no collective on `c` at all ended before it too,
  // when each is blocked in an NCCL call elsewhere: a communicator its peers never used for a
  // collective, where a rank issued one first (a rank gone or in host code is a stop). Fewer
  // than they: a collective most members issued first holds the few that did not (a relay that
  // dropped a send, the p2p accounting's case); unless the issuers are the very ranks the later
  // verdict named: they fell short there because this collective holds them.
  const std::vector<int> silent = p == 0 ? blockedElsewhere(c) : std::vector<int>{};
  const bool held_here = !silent.empty() && ranksOf(c, going) == culprits;
  if (ended.empty() && silent.size() <= going.size() && !held_here) return false;
  for (size_t s : ended) {
    if (c.streams[s].ops.size() != p) return false;
  }
  const Op& extra = c.streams[going.front()].ops[p];
  for (size_t s : going) {
    if (c.streams[s].ops[p].key != extra.key) return false;
  }
  // An op this communicator never issued before: a collective only they added.
  if (knownSite(c, p, opSite(extra), ended)) return false;
  const RankData& rd = set_.ranks[c.streams[going.front()].rank];
  v.cls = VerdictClass::kRankGatedCollective;
  v.ranks = ranksOf(c, going);
  v.comm_id = c.comm_id;
  v.seq = extra.e->op_seq;
  v.op = extra.e->op;
  v.site = siteAt(rd, *extra.e);
  v.stacks = {v.site};
  std::vector<size_t> all(c.streams.size());
  for (size_t s = 0; s < all.size(); ++s) all[s] = s;
  const auto with_silent = [&](std::vector<int> ranks) {
    ranks.insert(ranks.end(), silent.begin(), silent.end());
    std::sort(ranks.begin(), ranks.end());
    return ranks;
  };
  v.headline =
      aloneHeadline(v, with_silent(ranksOf(c, all)),
                    Instead::of(Instead::Kind::kOthersIssuedNone, with_silent(ranksOf(c, ended))));
  return true;
}

std::vector<int> Engine::blockedElsewhere(const CommStreams& c) const {
  const WaitGraph& g = waits();
  std::vector<int> out;
  for (const int m : g.members(c.comm_id)) {
    const std::optional<size_t> x = g.processOf(c.comm_id, m);
    if (!x || std::any_of(c.streams.begin(), c.streams.end(),
                          [&](const Stream& s) { return s.rank == *x; })) {
      continue;  // no recording, or a stream of collectives there
    }
    if (g.gone(*x) || g.waitsIn(*x).empty()) return {};
    out.push_back(globalRank(*x));
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool Engine::collectiveCauseOfP2pWait(Verdict& v, Inferred& inferred) const {
  std::optional<Verdict> best;
  int64_t best_at = INT64_MAX;
  for (const CommStreams& c : comms_) {
    const bool pending = std::any_of(c.streams.begin(), c.streams.end(), [](const Stream& s) {
      return std::any_of(s.ops.begin(), s.ops.end(),
                         [](const Op& o) { return isIncomplete(*o.e); });
    });
    if (!pending) continue;
    Verdict cause;
    Inferred tried = inferred;  // forgotten: the cause found is a divergence, not a stop
    const bool found = (diagnoseComm(c, cause, tried) && isDivergence(cause.cls)) ||
                       aloneAtTheEnd(c, cause, v.ranks);
    if (!found) continue;
    const int64_t at = opTime(cause.comm_id, cause.seq);
    keepEarliest(best, best_at, std::move(cause), at);
  }
  if (!best) return false;
  becomeCause(v, std::move(*best));
  return true;
}

bool earlierDivergence(const Engine& en, Inferred& inferred, Verdict& v) {
  return en.preferEarlierCause(v, inferred);
}

bool collectiveBehindP2pWait(const Engine& en, Inferred& inferred, Verdict& v) {
  return en.collectiveCauseOfP2pWait(v, inferred);
}

}  // namespace ncclrec::analyzer::engine
