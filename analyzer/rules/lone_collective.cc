// The lone_collective rule (rank_gated_collective): rules/lone_collective.h.
#include "analyzer/rules/lone_collective.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/headlines.h"
#include "analyzer/rank_ops.h"
#include "analyzer/rules/comm_calls.h"

namespace ncclrec::analyzer {

using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;

std::optional<Verdict> findLoneCollective(const format::LoadedSet& set, const CallSites& sites) {
  struct Use {
    const EventRecord* first = nullptr;  // its first collective on the communicator
    size_t rank = 0;
    bool ended = false;  // destroyed or finalized it
  };
  std::map<uint64_t, std::map<size_t, Use>> uses;  // comm -> rank index -> use
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    uint64_t last_comm = 0;
    Use* last_use = nullptr;  // uses[last_comm][i]: map nodes stay put
    for (const EventRecord& e : set.ranks[i].events) {
      if (e.commId() == 0 || e.state == EventState::kEmpty || rejected(e)) continue;
      if (last_use == nullptr || e.commId() != last_comm) {
        last_comm = e.commId();
        last_use = &uses[e.commId()][i];
      }
      Use& u = *last_use;
      u.rank = i;
      if (format::isCollective(e.op) && u.first == nullptr) u.first = &e;
      const bool end = e.op == OpType::kCommDestroy || e.op == OpType::kCommFinalize;
      if (end && e.state == EventState::kCompleted && u.first == nullptr) u.ended = true;
    }
  }
  for (const auto& [comm, members] : uses) {
    std::vector<const Use*> issuers;
    std::vector<int> others;
    bool someone_ended = false;
    for (const auto& [i, u] : members) {
      if (u.first != nullptr) {
        issuers.push_back(&u);
      } else {
        others.push_back(set.ranks[i].global_rank);
        someone_ended = someone_ended || u.ended;
      }
    }
    if (issuers.empty() || !someone_ended || issuers.size() >= others.size()) continue;
    const EventRecord& first = *issuers.front()->first;
    const bool lone = std::all_of(issuers.begin(), issuers.end(), [&](const Use* u) {
      return unfinished(*u->first) && u->first->op == first.op && u->first->count == first.count;
    });
    if (!lone) continue;
    Verdict v;
    v.cls = VerdictClass::kRankGatedCollective;
    for (const Use* u : issuers) v.ranks.push_back(set.ranks[u->rank].global_rank);
    std::sort(v.ranks.begin(), v.ranks.end());
    std::sort(others.begin(), others.end());
    v.comm_id = comm;
    v.seq = first.op_seq;
    v.op = first.op;
    v.site = callSiteOf(set.ranks[issuers.front()->rank], first, sites);
    v.stacks = {v.site};
    v.headline = aloneHeadline(v, {}, Instead::of(Instead::Kind::kOthersNeverUsedIt, others));
    return v;
  }
  return std::nullopt;
}

}  // namespace ncclrec::analyzer
