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

std::vector<WaitPlace> waitPlaces(const format::LoadedSet& set, const CallSites& sites,
                                  const Verdict& v) {
  // The waiting ranks grouped by where they are: (comm, seq, op, failed, call site).
  using Where = std::tuple<uint64_t, uint64_t, format::OpType, bool, std::string>;
  std::map<Where, WaitPlace> groups;
  for (const RankData& r : set.ranks) {
    if (!std::binary_search(v.waiting.begin(), v.waiting.end(), r.global_rank)) continue;
    const EventRecord* e = newestWait(r);
    if (e == nullptr) continue;
    CallSite site = callSiteOf(r, *e, sites);
    WaitPlace& p = groups[{e->commId(), e->op_seq, e->op, lostPeer(*e), describeCallSite(site)}];
    if (p.ranks.empty()) p = {{}, e->commId(), e->op_seq, e->op, lostPeer(*e), std::move(site)};
    p.ranks.push_back(r.global_rank);
  }
  std::vector<WaitPlace> places;
  if (groups.size() > kMaxPlaces) return places;
  for (auto& [where, p] : groups) {
    std::sort(p.ranks.begin(), p.ranks.end());
    places.push_back(std::move(p));
  }
  std::sort(places.begin(), places.end(), [](const WaitPlace& a, const WaitPlace& b) {
    return a.ranks.front() < b.ranks.front();
  });
  return places;
}

void addWaiting(const format::LoadedSet& set, const CallSites& sites, Verdict& v) {
  v.waiting = waitingRanks(set, v);
  if (namesOnlyCulprits(v.cls)) v.headline += waitingPhrase(v, waitPlaces(set, sites, v));
}

}  // namespace ncclrec::analyzer
