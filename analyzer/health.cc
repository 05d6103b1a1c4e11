#include "analyzer/health.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

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

std::optional<Verdict> findSlowRank(const format::LoadedSet& set, const CallSites& sites) {
  // comm -> seq -> (latest enqueue, its rank index, how many ranks issued it)
  struct Slot {
    int64_t earliest = INT64_MAX;
    int64_t latest = 0;
    int64_t second = 0;  // the latest enqueue but one: how long the others waited at least
    size_t rank = 0;
    size_t ranks = 0;
    const format::EventRecord* event = nullptr;
  };
  constexpr size_t kTied = SIZE_MAX;
  std::map<uint64_t, std::map<uint64_t, Slot>> slots;
  std::map<uint64_t, size_t> members;
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
        if (holds.insert(e.commId()).second) ++members[e.commId()];  // once per rank
        last_comm = e.commId();
        by_seq = &slots[e.commId()];
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
        s.rank = kTied;  // no one rank was last
      } else {
        s.second = std::max(s.second, e.enqueueNs());
      }
    }
  }
  for (const auto& [comm, by_seq] : slots) {
    if (members[comm] < 2) continue;
    std::map<size_t, size_t> last_count;
    std::map<size_t, int64_t> wait_for;  // rank -> how long the others waited for it, summed
    int64_t total_wait = 0;
    int64_t first = INT64_MAX;
    int64_t end = 0;
    size_t full = 0;
    for (const auto& [seq, s] : by_seq) {
      if (s.ranks != members[comm]) continue;
      ++full;
      first = std::min(first, s.earliest);
      end = std::max(end, s.latest);
      total_wait += s.latest - s.second;
      if (s.rank != kTied) {
        ++last_count[s.rank];
        wait_for[s.rank] += s.latest - s.second;
      }
    }
    if (full < kSlowMinOps) continue;
    const double span = static_cast<double>(end - first);
    for (const auto& [rank, n] : last_count) {
      // Last most of the time, or last often enough, and then by far the one the others wait
      // for (a rank late to one collective of each step, the step's others starting together).
      const double waited = static_cast<double>(wait_for[rank]);
      const bool mostly_last = static_cast<double>(n) >= kSlowShare * static_cast<double>(full);
      const bool costly = total_wait > 0 &&
                          waited >= kSlowWaitShare * static_cast<double>(total_wait) &&
                          waited >= kSlowWaitOfSpan * span && waited >= kSlowMinWaitNs;
      // Either way the waiting must matter: a rank last by microseconds is not slow.
      if ((!mostly_last && !costly) || waited < kSlowMinWaitNs) continue;
      // Over few collectives some rank is last most of the time by chance (3 ranks, 8 ops: one of
      // them is last in 6 or more about 5 % of the time): the share must also be unlikely when
      // every rank is equally likely to be last.
      if (static_cast<double>(members[comm]) *
              chanceOfBeingLast(n, full, static_cast<double>(members[comm])) >=
          kSlowChance) {
        continue;
      }
      Verdict v;
      v.cls = VerdictClass::kSlowRank;
      const format::RankData& r = set.ranks[rank];
      v.ranks = {r.global_rank};
      v.comm_id = comm;
      // The slot where the others waited longest for it: its call site is where it is late.
      int64_t longest = -1;
      for (const auto& [seq, s] : by_seq) {
        if (s.rank == rank && s.ranks == members[comm] && s.latest - s.second > longest) {
          longest = s.latest - s.second;
          v.op = s.event->op;
          v.site = callSiteOf(r, *s.event, sites);
        }
      }
      char share[16];
      std::snprintf(share, sizeof(share), "%.0f%%",
                    100.0 * static_cast<double>(n) / static_cast<double>(full));
      v.headline = "no hang, but rank " + std::to_string(r.global_rank) +
                   " was the last to issue " + std::to_string(n) + " of " + std::to_string(full) +
                   " collectives (" + share + ") on comm " + shortCommId(comm) +
                   ": the others wait for it";
      if (span > 0) {
        char wait[96];
        std::snprintf(wait, sizeof(wait),
                      " (%.2f s, %.0f%% of all their waiting, %.0f%% of %.2f s)", waited / 1e9,
                      100.0 * waited / static_cast<double>(total_wait), 100.0 * waited / span,
                      span / 1e9);
        v.headline += wait;
      }
      return v;
    }
  }
  return std::nullopt;
}

}  // namespace ncclrec::analyzer
