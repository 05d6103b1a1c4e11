#include "analyzer/health.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analyzer/headlines_outcomes.h"

namespace ncclrec::analyzer {
namespace {

// P(X >= n) for X ~ Binomial(full, 1 / ranks): how likely one given rank is last in n or more of
// `full` collectives when each rank is equally likely to be last.
double chanceOfBeingLast(size_t n, size_t full, double ranks) {
  const double p = 1.0 / ranks;
  double tail = 0;
  for (size_t k = n; k <= full; ++k) {
    const double log_term =
        std::lgamma(static_cast<double>(full) + 1) - std::lgamma(static_cast<double>(k) + 1) -
        std::lgamma(static_cast<double>(full - k) + 1) + static_cast<double>(k) * std::log(p) +
        static_cast<double>(full - k) * std::log1p(-p);
    tail += std::exp(log_term);
  }
  return tail;
}

}  // namespace

namespace {

// One collective slot of a communicator, over the ranks that completed it.
struct Slot {
  int64_t earliest = INT64_MAX;
  int64_t latest = 0;
  int64_t second = 0;  // the latest enqueue but one: how long the others waited at least
  size_t rank = 0;     // the rank index that issued it last; kTied when no one rank was last
  size_t ranks = 0;    // how many ranks completed it
  const format::EventRecord* event = nullptr;
};
constexpr size_t kTied = SIZE_MAX;

// comm -> seq -> slot, and how many ranks each communicator has, from every completed collective.
struct Slots {
  std::map<uint64_t, std::map<uint64_t, Slot>> by_comm;
  std::map<uint64_t, size_t> members;
};

Slots gatherSlots(const format::LoadedSet& set) {
  Slots out;
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    std::set<uint64_t> holds;  // the communicators this rank counted itself a member of
    uint64_t last_comm = 0;
    // A rank's ops on one communicator come in seq order: the next one's slot is found from the
    // last one's in constant time (a hint), not by a search.
    std::map<uint64_t, Slot>* by_seq = nullptr;
    std::map<uint64_t, Slot>::iterator next;
    for (const format::EventRecord& e : set.ranks[i].events) {
      if (!format::isCollective(e.op) || e.commId() == 0 || e.enqueueNs() <= 0 ||
          e.state != format::EventState::kCompleted) {
        continue;
      }
      if (e.commId() != last_comm) {
        if (holds.insert(e.commId()).second) ++out.members[e.commId()];  // once per rank
        last_comm = e.commId();
        by_seq = &out.by_comm[e.commId()];
        next = by_seq->end();
      }
      const auto at = by_seq->try_emplace(next, e.op_seq);
      next = std::next(at);
      Slot& s = at->second;
      ++s.ranks;
      s.earliest = std::min(s.earliest, e.enqueueNs());
      if (e.enqueueNs() > s.latest) {
        s.second = s.latest;
        s.latest = e.enqueueNs();
        s.rank = i;
        s.event = &e;
      } else if (e.enqueueNs() == s.latest) {
        s.second = s.latest;
        s.rank = kTied;
      } else {
        s.second = std::max(s.second, e.enqueueNs());
      }
    }
  }
  return out;
}

// Who was last on one communicator's full slots, and what the others' waiting for it cost.
struct Lateness {
  std::map<size_t, size_t> last_count;  // rank -> how many slots it was last in
  std::map<size_t, int64_t> wait_for;   // rank -> how long the others waited for it, summed
  int64_t total_wait = 0;
  size_t full = 0;  // slots every member completed
  double span = 0;  // from the first enqueue to the last, ns
};

Lateness latenessOf(const std::map<uint64_t, Slot>& by_seq, size_t members) {
  Lateness l;
  int64_t first = INT64_MAX;
  int64_t end = 0;
  for (const auto& [seq, s] : by_seq) {
    if (s.ranks != members) continue;
    ++l.full;
    first = std::min(first, s.earliest);
    end = std::max(end, s.latest);
    l.total_wait += s.latest - s.second;
    if (s.rank != kTied) {
      ++l.last_count[s.rank];
      l.wait_for[s.rank] += s.latest - s.second;
    }
  }
  l.span = static_cast<double>(end - first);
  return l;
}

// Whether `rank`, last in `n` of l.full slots of a communicator of `members` ranks, is slow.
bool isSlow(const Lateness& l, size_t rank, size_t n, size_t members) {
  // Last most of the time, or last often enough, and then by far the one the others wait for (a
  // rank late to one collective of each step, the step's others starting together).
  const double waited = static_cast<double>(l.wait_for.at(rank));
  const bool mostly_last = static_cast<double>(n) >= kSlowShare * static_cast<double>(l.full);
  const bool costly = l.total_wait > 0 &&
                      waited >= kSlowWaitShare * static_cast<double>(l.total_wait) &&
                      waited >= kSlowWaitOfSpan * l.span && waited >= kSlowMinWaitNs;
  // Either way the waiting must matter: a rank last by microseconds is not slow.
  if ((!mostly_last && !costly) || waited < kSlowMinWaitNs) return false;
  // Over few collectives some rank is last most of the time by chance (3 ranks, 8 ops: one of
  // them is last in 6 or more about 5 % of the time): the share must also be unlikely when every
  // rank is equally likely to be last.
  const double m = static_cast<double>(members);
  return m * chanceOfBeingLast(n, l.full, m) < kSlowChance;
}

Verdict slowVerdict(const format::LoadedSet& set, const CallSites& sites, uint64_t comm,
                    const std::map<uint64_t, Slot>& by_seq, size_t members, const Lateness& l,
                    size_t rank, size_t n) {
  Verdict v;
  v.cls = VerdictClass::kSlowRank;
  const format::RankData& r = set.ranks[rank];
  v.ranks = {r.global_rank};
  v.comm_id = comm;
  // The slot where the others waited longest for it: its call site is where it is late.
  int64_t longest = -1;
  for (const auto& [seq, s] : by_seq) {
    if (s.rank == rank && s.ranks == members && s.latest - s.second > longest) {
      longest = s.latest - s.second;
      v.op = s.event->op;
      v.site = callSiteOf(r, *s.event, sites);
    }
  }
  v.headline = slowRankHeadline(v, {n, l.full, static_cast<double>(l.wait_for.at(rank)),
                                    static_cast<double>(l.total_wait), l.span});
  return v;
}

}  // namespace

std::optional<Verdict> findSlowRank(const format::LoadedSet& set, const CallSites& sites) {
  const Slots slots = gatherSlots(set);
  for (const auto& [comm, by_seq] : slots.by_comm) {
    const size_t members = slots.members.at(comm);
    if (members < 2) continue;
    const Lateness l = latenessOf(by_seq, members);
    if (l.full < kSlowMinOps) continue;
    for (const auto& [rank, n] : l.last_count) {
      if (isSlow(l, rank, n, members))
        return slowVerdict(set, sites, comm, by_seq, members, l, rank, n);
    }
  }
  return std::nullopt;
}

}  // namespace ncclrec::analyzer
