#include "analyzer/rules/device_collision.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "analyzer/headlines_liveness.h"
#include "format/bbox_layout.h"

namespace ncclrec::analyzer {
namespace {

using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;

constexpr int kNcclInvalidUsage = 5;

bool createsFromId(OpType op) {
  return op == OpType::kCommInitRank || op == OpType::kCommInitRankConfig ||
         op == OpType::kCommInitRankScalable;
}

// One rank's (latest) attempt to create a communicator, with the device it was on.
struct Attempt {
  const RankData* rank = nullptr;
  const EventRecord* event = nullptr;
  int device = -1;
  std::string bus_id;
  std::string uuid;
  bool refused() const {
    return event->state == EventState::kFailed && event->result == kNcclInvalidUsage;
  }
  // What tells two devices of one host apart; "" when nothing does.
  std::string key() const {
    if (!bus_id.empty()) return "bus " + bus_id;
    if (!uuid.empty()) return uuid;
    return device >= 0 ? "device " + std::to_string(device) : "";
  }
};

// The comm record of `e` in its rank: a failed attempt has one with kCommInitFailed.
const format::Comm* recordOf(const RankData& r, const EventRecord& e) {
  const bool failed = e.state == EventState::kFailed;
  const format::Comm* found = nullptr;
  for (const format::Comm& c : r.comms) {
    if (c.comm_id == e.commId() && c.created_by == e.op &&
        ((c.state & format::kCommInitFailed) != 0) == failed) {
      found = &c;  // the latest, as `e` is the latest attempt
    }
  }
  return found;
}

// The GPU that `group`'s ranks share, as the headline names it.
SharedGpu sharedGpuOf(const std::vector<const Attempt*>& group) {
  SharedGpu g;
  for (const Attempt* a : group) {
    g.ranks.push_back(a->rank->global_rank);
    g.ordinals.insert(a->device);
  }
  g.host = group.front()->rank->host;
  const Attempt& first = *group.front();
  g.id = !first.bus_id.empty() ? "bus " + first.bus_id : first.uuid;
  return g;
}

}  // namespace

std::optional<Verdict> findDeviceCollision(const format::LoadedSet& set, const CallSites& sites) {
  // comm -> global rank -> its latest creating call.
  std::map<uint64_t, std::map<int, Attempt>> attempts;
  for (const RankData& r : set.ranks) {
    for (const EventRecord& e : r.events) {
      if (!createsFromId(e.op) || e.commId() == 0 || e.state == EventState::kEmpty) continue;
      Attempt a{&r, &e, e.device(), "", ""};
      if (const format::Comm* c = recordOf(r, e)) {
        if (c->device >= 0) a.device = c->device;
        a.bus_id = c->bus_id;
        a.uuid = c->uuid;
      }
      attempts[e.commId()][r.global_rank] = a;
    }
  }
  // (comm, host, device key) -> refused attempts: a collision when two ranks or more.
  std::map<std::tuple<uint64_t, std::string, std::string>, std::vector<const Attempt*>> groups;
  for (const auto& [comm, by_rank] : attempts) {
    for (const auto& [rank, a] : by_rank) {
      if (a.refused() && !a.key().empty()) groups[{comm, a.rank->host, a.key()}].push_back(&a);
    }
  }
  std::vector<std::vector<const Attempt*>> collisions;
  for (auto& [key, group] : groups) {
    if (group.size() >= 2) collisions.push_back(std::move(group));
  }
  if (collisions.empty()) return std::nullopt;
  // The largest collision leads; ties go to the lowest rank.
  std::sort(collisions.begin(), collisions.end(), [](const auto& a, const auto& b) {
    if (a.size() != b.size()) return a.size() > b.size();
    return a.front()->rank->global_rank < b.front()->rank->global_rank;
  });

  Verdict v;
  v.cls = VerdictClass::kDeviceCollision;
  const Attempt& lead = *collisions.front().front();
  v.comm_id = lead.event->commId();
  v.op = lead.event->op;
  v.site = callSiteOf(*lead.rank, *lead.event, sites);
  v.stacks = {v.site};
  std::set<int> culprits;
  std::vector<SharedGpu> shared;
  for (const auto& group : collisions) {
    shared.push_back(sharedGpuOf(group));
    culprits.insert(shared.back().ranks.begin(), shared.back().ranks.end());
  }
  v.ranks.assign(culprits.begin(), culprits.end());
  v.headline = deviceCollisionHeadline(v, shared);

  EvidenceTable t;
  t.title = "devices at init of comm " + shortCommId(v.comm_id);
  t.columns = {"rank", "host", "local_rank", "device", "bus_id", "uuid", "init"};
  for (const auto& [rank, a] : attempts[v.comm_id]) {
    const auto textOrNone = [](const std::string& s) {
      return s.empty() ? TableCell::none() : TableCell::of(s);
    };
    const auto numberOrNone = [](int n) {
      return n >= 0 ? TableCell::of(int64_t{n}) : TableCell::none();
    };
    t.rows.push_back({TableCell::of(int64_t{rank}), textOrNone(a.rank->host),
                      numberOrNone(a.rank->local_rank), numberOrNone(a.device),
                      textOrNone(a.bus_id), textOrNone(a.uuid),
                      TableCell::of(evidenceOpOf(*a.rank, *a.event, sites))});
    t.marked.push_back(culprits.contains(rank));
  }
  v.tables.push_back(std::move(t));
  return v;
}

}  // namespace ncclrec::analyzer
