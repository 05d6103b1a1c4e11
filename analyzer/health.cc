#include "analyzer/health.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
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

std::optional<Verdict> findSlowRank(const format::LoadedSet& set, const SymbolTable& symbols) {
  // comm -> seq -> (latest enqueue, its rank index, how many ranks issued it)
  struct Slot {
    int64_t latest = 0;
    size_t rank = 0;
    size_t ranks = 0;
    const format::EventRecord* event = nullptr;
  };
  constexpr size_t kTied = SIZE_MAX;
  std::map<uint64_t, std::map<uint64_t, Slot>> slots;
  std::map<uint64_t, size_t> members;
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    uint64_t last_comm = 0;
    for (const format::EventRecord& e : set.ranks[i].events) {
      if (!format::isCollective(e.op) || e.comm_id == 0 || e.enqueue_ns <= 0 ||
          e.state != format::EventState::kCompleted) {
        continue;
      }
      if (e.comm_id != last_comm) {
        ++members[e.comm_id];
        last_comm = e.comm_id;
      }
      Slot& s = slots[e.comm_id][e.op_seq];
      ++s.ranks;
      if (e.enqueue_ns > s.latest) {
        s.latest = e.enqueue_ns;
        s.rank = i;
        s.event = &e;
      } else if (e.enqueue_ns == s.latest) {
        s.rank = kTied;  // no one rank was last
      }
    }
  }
  for (const auto& [comm, by_seq] : slots) {
    if (members[comm] < 2) continue;
    std::map<size_t, size_t> last_count;
    size_t full = 0;
    for (const auto& [seq, s] : by_seq) {
      if (s.ranks != members[comm]) continue;
      ++full;
      if (s.rank != kTied) ++last_count[s.rank];
    }
    if (full < kSlowMinOps) continue;
    for (const auto& [rank, n] : last_count) {
      if (static_cast<double>(n) < kSlowShare * static_cast<double>(full)) continue;
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
      // The slot where it was last: its call site is where the others waited for it.
      for (const auto& [seq, s] : by_seq) {
        if (s.rank == rank && s.ranks == members[comm]) {
          v.op = s.event->op;
          v.site = callSiteOf(r, *s.event, symbols);
        }
      }
      char share[16];
      std::snprintf(share, sizeof(share), "%.0f%%",
                    100.0 * static_cast<double>(n) / static_cast<double>(full));
      v.headline = "no hang, but rank " + std::to_string(r.global_rank) +
                   " was the last to issue " + std::to_string(n) + " of " + std::to_string(full) +
                   " collectives (" + share + ") on comm " + shortCommId(comm) +
                   ": the others wait for it";
      return v;
    }
  }
  return std::nullopt;
}

}  // namespace ncclrec::analyzer
