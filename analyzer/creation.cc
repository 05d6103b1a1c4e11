#include "analyzer/creation.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <set>
#include <string_view>

#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer {

using format::EventRecord;
using format::EventState;
using format::RankData;

int Creation::agreedSize() const {
  std::map<int, size_t> votes;
  for (const Joiner& j : joiners) ++votes[j.nranks];
  int best = 0;
  size_t most = 0;
  for (const auto& [n, count] : votes) {
    if (count >= most) {
      best = n;
      most = count;
    }
  }
  return best;
}

size_t Creation::pending() const {
  return static_cast<size_t>(
      std::count_if(joiners.begin(), joiners.end(), [](const Joiner& j) { return !j.failed(); }));
}

namespace {

// The record the creating call `e` claimed (or, in older recordings, the one it left when it
// failed): same id and creating op, the newest.
const format::Comm* recordOf(const RankData& r, const EventRecord& e) {
  const format::Comm* found = nullptr;
  for (const format::Comm& c : r.comms) {
    if (c.comm_id == e.commId() && c.created_by == e.op) found = &c;
  }
  return found;
}

// The rank's newest joining call per id, when it had not succeeded.
void joinersOf(const format::LoadedSet& set, size_t r, std::map<uint64_t, Creation>& by_id) {
  const RankData& rd = set.ranks[r];
  std::map<uint64_t, const EventRecord*> newest;
  for (const EventRecord& e : rd.events) {
    if (format::joinsById(e.op) && e.commId() != 0 && e.state != EventState::kEmpty)
      newest[e.commId()] = &e;
  }
  for (const auto& [id, e] : newest) {
    if (e->state == EventState::kCompleted) continue;
    Creation& c = by_id[id];
    c.id = id;
    Joiner j;
    j.rank = r;
    j.global_rank = rd.global_rank;
    j.event = e;
    j.record = recordOf(rd, *e);
    j.comm_rank = e->rank();
    j.nranks = e->nranks();
    c.joiners.push_back(j);
    if (j.record != nullptr && c.root.empty()) c.root = j.record->root;
  }
}

// Where each id was made: the ncclGetUniqueId call that returned it (its aux64).
void findMakers(const format::LoadedSet& set, std::map<uint64_t, Creation>& by_id) {
  for (const RankData& rd : set.ranks) {
    for (const format::EventAux& aux : rd.event_aux) {
      const auto c = by_id.find(aux.aux64);
      if (c == by_id.end() || c->second.made_by != nullptr) continue;
      const auto e =
          std::lower_bound(rd.events.begin(), rd.events.end(), aux.index,
                           [](const EventRecord& x, uint64_t index) { return x.index < index; });
      if (e == rd.events.end() || e->index != aux.index || e->op != format::OpType::kGetUniqueId ||
          e->state != EventState::kCompleted) {
        continue;
      }
      c->second.maker = &rd;
      c->second.made_by = &*e;
    }
  }
}

}  // namespace

bool joiningById(const format::RankData& rank) {
  return std::any_of(rank.events.begin(), rank.events.end(), [](const EventRecord& e) {
    return format::joinsById(e.op) && isIncomplete(e);
  });
}

std::vector<Creation> pendingCreations(const format::LoadedSet& set) {
  std::map<uint64_t, Creation> by_id;
  for (size_t r = 0; r < set.ranks.size(); ++r) joinersOf(set, r, by_id);
  findMakers(set, by_id);
  std::vector<Creation> out;
  for (auto& [id, c] : by_id) {
    if (c.pending() == 0) continue;  // every joiner failed: the failed-call rules read it
    std::sort(c.joiners.begin(), c.joiners.end(), [&](const Joiner& a, const Joiner& b) {
      if (a.global_rank != b.global_rank) return a.global_rank < b.global_rank;
      return set.ranks[a.rank].pid < set.ranks[b.rank].pid;
    });
    c.first_ns = INT64_MAX;
    for (const Joiner& j : c.joiners) {
      c.first_ns = std::min(c.first_ns, j.event->enqueueNs());
      c.last_ns = std::max(c.last_ns, j.event->enqueueNs());
    }
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(),
            [](const Creation& a, const Creation& b) { return a.first_ns < b.first_ns; });
  return out;
}

std::optional<std::pair<int, int>> rankMapping(const std::vector<std::pair<int, int>>& joined,
                                               std::optional<int> stride) {
  if (joined.empty()) return std::nullopt;
  const auto [g0, c0] = joined.front();
  int a = stride.value_or(1);
  for (const auto& [g, c] : joined) {
    if (c != c0) {
      if ((g - g0) % (c - c0) != 0) return std::nullopt;
      a = (g - g0) / (c - c0);
      break;
    }
  }
  if (a < 1) return std::nullopt;
  const int b = g0 - a * c0;
  for (const auto& [g, c] : joined) {
    if (g != a * c + b) return std::nullopt;
  }
  return std::make_pair(a, b);
}

Missing missingMembers(const std::vector<std::pair<int, int>>& joined, int nranks,
                       const std::vector<int>& others, int world_size, std::optional<int> stride) {
  Missing m;
  std::set<int> taken;
  for (const auto& [g, c] : joined) taken.insert(c);
  for (int c = 0; c < nranks; ++c) {
    if (!taken.contains(c)) m.comm_ranks.push_back(c);
  }
  if (m.comm_ranks.empty()) return m;
  // A communicator of the whole job, or exactly as many others as places left: all of them.
  if ((world_size > 0 && nranks == world_size) || others.size() == m.comm_ranks.size()) {
    m.global_ranks = others;
    m.how = Missing::How::kAllOthers;
    return m;
  }
  if (const auto map = rankMapping(joined, stride)) {
    for (int c : m.comm_ranks) {
      const int g = map->first * c + map->second;
      if (std::binary_search(others.begin(), others.end(), g)) m.global_ranks.push_back(g);
    }
    if (m.global_ranks.size() == m.comm_ranks.size()) {
      m.how = Missing::How::kMapping;
      return m;
    }
    m.global_ranks.clear();
  }
  return m;
}

bool namesCollective(const std::string& function) {
  // The last component of a qualified name, parameters cut: "c10d::ProcessGroupNCCL::allreduce".
  const std::string plain = shortFunctionName(function);
  std::string_view name = plain;
  if (const size_t sep = name.find_last_of(":."); sep != std::string_view::npos)
    name = name.substr(sep + 1);
  std::string word;
  for (char ch : name) {
    if (ch != '_') word += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  static constexpr std::array<std::string_view, 12> kExact = {
      "reduce", "gather", "scatter",       "barrier",           "send",        "recv", "isend",
      "irecv",  "bcast",  "allgatherbase", "reducescatterbase", "alltoallbase"};
  static constexpr std::array<std::string_view, 5> kPrefixes = {
      "allreduce", "allgather", "reducescatter", "alltoall", "broadcast"};
  if (std::find(kExact.begin(), kExact.end(), word) != kExact.end()) return true;
  return std::any_of(kPrefixes.begin(), kPrefixes.end(),
                     [&](std::string_view p) { return word.starts_with(p); });
}

std::optional<size_t> lazyTrigger(const CallSite& site) {
  for (size_t i = 0; i < site.frames.size(); ++i) {
    // Python frames come first: a native frame below a Python stack is the interpreter's.
    if (i > 0 && site.frames[i - 1].python && !site.frames[i].python) break;
    if (namesCollective(site.frames[i].function)) return i;
  }
  return std::nullopt;
}

}  // namespace ncclrec::analyzer
