// The detector's view of a communicator being created (need.h): its members join by unique id,
// each in its own call, and the call returns on all of them together once every member joined.
#include <algorithm>
#include <map>
#include <set>

#include "analyzer/creation.h"
#include "analyzer/verdict.h"
#include "live/need.h"

namespace ncclrec::live::detail {
namespace {

// Members whose arguments make the creation impossible (NCCL's bootstrap root stops at the first
// mismatch): sizes that disagree with the most common one, a rank claimed twice, a rank outside
// [0, nranks). Fills the need's blame and reason; false when they agree.
bool argumentsDisagree(const Snapshot& s, const CommGroup& g, Need* n) {
  std::map<int, int> sizes;
  std::map<int, int> claims;
  for (const CommMember& m : g.members) {
    ++sizes[m.nranks];
    ++claims[m.comm_rank];
  }
  const int agreed = std::max_element(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) {
                       return a.second < b.second;
                     })->first;
  for (const CommMember& m : g.members) {
    const bool bad =
        m.nranks != agreed || claims[m.comm_rank] > 1 || m.comm_rank < 0 || m.comm_rank >= m.nranks;
    if (!bad) continue;
    n->blame.push_back(m.rank);
    if (n->reason.empty()) {
      n->reason = rankName(s, m.rank) + " joins comm " + analyzer::shortCommId(g.comm_id) +
                  " as rank " + std::to_string(m.comm_rank) + " of " + std::to_string(m.nranks) +
                  (m.nranks != agreed ? ", the others of " + std::to_string(agreed)
                                      : ", which another process joins as too");
    }
  }
  n->cannot = !n->blame.empty();
  return n->cannot;
}

}  // namespace

Need creationNeed(const Snapshot& s, size_t r, const OpView& /*op*/, const CommGroup* g) {
  Need n;
  if (g == nullptr || g->members.empty()) {
    n.unknown = true;  // no record of the creation in this view (an older recorder)
    return n;
  }
  if (argumentsDisagree(s, *g, &n)) return n;
  std::set<size_t> joined_idx;
  std::vector<std::pair<int, int>> joined;
  for (const CommMember& m : g->members) {
    joined_idx.insert(m.rank);
    joined.emplace_back(s.ranks[m.rank].global_rank, m.comm_rank);
  }
  // The job's other processes: those this view shows, and the ranks below the world size it
  // shows none of (they made no NCCL call yet: the recorder writes nothing before the first).
  std::map<int, size_t> by_global;
  int world = 0;
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    world = std::max(world, s.ranks[i].world_size);
    if (!joined_idx.contains(i)) by_global.emplace(s.ranks[i].global_rank, i);
  }
  std::vector<int> others;
  std::set<int> seen;
  for (size_t i = 0; i < s.ranks.size(); ++i) seen.insert(s.ranks[i].global_rank);
  for (const auto& [global, i] : by_global) others.push_back(global);
  for (int gr = 0; gr < world; ++gr) {
    if (!seen.contains(gr)) others.push_back(gr);
  }
  std::sort(others.begin(), others.end());
  const analyzer::Missing missing =
      analyzer::missingMembers(joined, g->members.front().nranks, others, world);
  if (missing.comm_ranks.empty()) {
    n.unknown = true;  // every member joined: its bootstrap is all that is left
    n.all_joined = true;
    return n;
  }
  if (missing.global_ranks.empty()) {
    n.unknown = true;  // members this view cannot name
    return n;
  }
  for (int gr : missing.global_ranks) {
    const auto it = by_global.find(gr);
    if (it == by_global.end()) {
      n.unknown = true;
      n.unrecorded.push_back(gr);
    } else if (it->second != r) {
      notArrived(s, it->second, &n);
    }
  }
  return n;
}

}  // namespace ncclrec::live::detail
