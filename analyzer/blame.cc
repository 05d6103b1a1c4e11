#include "analyzer/blame.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "analyzer/exit_codes.h"
#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer {
namespace {

using format::EventRecord;
using format::EventState;
using format::RankData;

// Places of waiting ranks a headline names one by one; more are summed up as "wait for it".
constexpr size_t kMaxPlaces = 2;

// Where a rank waits: its newest collective or point-to-point call, or a communicator's creation
// it entered after it; nullptr when it made neither.
const EventRecord* newestWait(const RankData& r) {
  const EventRecord* op = newestCommOp(r);
  const EventRecord* creating = newestPendingCreation(r);
  return creating != nullptr && (op == nullptr || creating->index > op->index) ? creating : op;
}

}  // namespace

std::vector<int> waitingRanks(const format::LoadedSet& set, const Verdict& v) {
  std::vector<int> out;
  if (exitCodeFor(v.cls) == kExitOk) return out;
  std::map<int, RankState> state;  // global rank -> status (addStatus)
  for (const RankStatus& s : v.status) state[s.rank] = s.state;
  for (const RankData& r : set.ranks) {
    if (std::binary_search(v.ranks.begin(), v.ranks.end(), r.global_rank)) continue;
    const auto st = state.find(r.global_rank);
    if (st != state.end() && (st->second == RankState::kDead || st->second == RankState::kCrashed))
      continue;
    if (r.fatal_signal != 0) continue;
    const EventRecord* e = newestWait(r);
    if (e == nullptr) continue;
    if ((isIncomplete(*e) && !r.exited) || lostPeer(*e)) out.push_back(r.global_rank);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string waitingPhrase(const format::LoadedSet& set, const CallSites& sites, const Verdict& v) {
  if (v.waiting.empty()) return "";
  // The waiting ranks grouped by where they are: (comm, seq, op, failed, call site).
  using Where = std::tuple<uint64_t, uint64_t, format::OpType, bool, std::string>;
  std::map<Where, std::vector<int>> groups;
  for (const RankData& r : set.ranks) {
    if (!std::binary_search(v.waiting.begin(), v.waiting.end(), r.global_rank)) continue;
    const EventRecord* e = newestWait(r);
    if (e == nullptr) continue;
    groups[{e->commId(), e->op_seq, e->op, lostPeer(*e),
            describeCallSite(callSiteOf(r, *e, sites))}]
        .push_back(r.global_rank);
  }
  const bool one = v.waiting.size() == 1;
  const std::string it = v.ranks.size() > 1 ? "them" : "it";
  const std::string head = "; " + ranksWord(v.waiting) + (one ? " waits for " : " wait for ") + it;
  if (groups.empty() || groups.size() > kMaxPlaces) return head;
  std::vector<std::pair<Where, std::vector<int>>> ordered(groups.begin(), groups.end());
  for (auto& [where, ranks] : ordered) std::sort(ranks.begin(), ranks.end());
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.second.front() < b.second.front(); });
  std::string out;
  for (const auto& [where, ranks] : ordered) {
    const auto& [comm, seq, op, failed, site] = where;
    const bool first = out.empty();
    const bool single = ranks.size() == 1;
    out += first ? "; " + ranksWord(ranks) : ", " + ranksWord(ranks);
    out += failed   ? " failed in "
           : !first ? " in "
           : single ? " waits for " + it + " in "
                    : " wait for " + it + " in ";
    // The verdict's own op goes without its name and communicator; another one is named (a
    // communicator's creation has no sequence number).
    if (comm == v.comm_id && op == v.op && seq != 0) {
      out += "#" + std::to_string(seq);
    } else {
      out += std::string(format::opName(op)) + (seq != 0 ? " #" + std::to_string(seq) : "");
      if (comm != v.comm_id) out += " on comm " + shortCommId(comm);
    }
    out += " from " + site;
  }
  return out;
}

void addWaiting(const format::LoadedSet& set, const CallSites& sites, Verdict& v) {
  v.waiting = waitingRanks(set, v);
  if (namesOnlyCulprits(v.cls)) v.headline += waitingPhrase(set, sites, v);
}

}  // namespace ncclrec::analyzer
