#include "analyzer/wait_graph.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer {

using format::EventRecord;
using format::EventState;

WaitGraph::WaitGraph(const format::LoadedSet& set, std::vector<Liveness> liveness)
    : liveness_(std::move(liveness)) {
  liveness_.resize(set.ranks.size(), Liveness::kRunning);
  for (const format::RankData& r : set.ranks) global_rank_.push_back(r.global_rank);
  gather(set);
  addCollectiveWaits();
  addSendReceiveWaits(set);
}

std::optional<size_t> WaitGraph::processOf(uint64_t comm, int comm_rank) const {
  const auto it = process_of_.find({comm, comm_rank});
  if (it == process_of_.end()) return std::nullopt;
  return it->second;
}

int WaitGraph::globalRankOf(uint64_t comm, int comm_rank) const {
  const std::optional<size_t> p = processOf(comm, comm_rank);
  return p ? global_rank_[*p] : -1;
}

std::optional<int> WaitGraph::rankIn(size_t process, uint64_t comm) const {
  const auto it = rank_in_.find({process, comm});
  if (it == rank_in_.end()) return std::nullopt;
  return it->second;
}

const std::set<int>& WaitGraph::members(uint64_t comm) const {
  static const std::set<int> kNone;
  const auto it = members_.find(comm);
  return it == members_.end() ? kNone : it->second;
}

uint64_t WaitGraph::reached(size_t process, uint64_t comm) const {
  const auto it = reached_.find({process, comm});
  return it == reached_.end() ? 0 : it->second;
}

bool WaitGraph::issued(size_t process, uint64_t comm, uint64_t seq) const {
  const auto it = reached_.find({process, comm});
  return it != reached_.end() && it->second >= seq;
}

std::vector<size_t> WaitGraph::behind(uint64_t comm, uint64_t seq, size_t self) const {
  std::vector<size_t> out;
  for (int m : members(comm)) {
    const std::optional<size_t> j = processOf(comm, m);
    if (j && *j != self && reached(*j, comm) < seq) out.push_back(*j);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

const EventRecord* WaitGraph::newestWait(size_t process) const {
  const EventRecord* op = waits_in_[process].empty() ? nullptr : waits_in_[process].back();
  const EventRecord* creation = creating_[process];
  return creation != nullptr && (op == nullptr || creation->index > op->index) ? creation : op;
}

bool WaitGraph::counterpartPosted(const EventRecord& e) const {
  const auto theirs = posted_.find({e.commId(), counterpartOf(e.op), e.peer(), e.rank()});
  return theirs != posted_.end() && theirs->second.contains(e.op_seq);
}

// Who holds which comm rank (comm records first: a record says which rank the process asked for),
// how far each process got on each communicator, what it waits in, and what every process posted
// of its sends and receives.
void WaitGraph::gather(const format::LoadedSet& set) {
  const size_t n = set.ranks.size();
  for (size_t i = 0; i < n; ++i) {
    for (const format::Comm& c : set.ranks[i].comms) {
      if (c.comm_id == 0 || c.rank < 0) continue;
      process_of_.try_emplace({c.comm_id, c.rank}, i);
      rank_in_.try_emplace({i, c.comm_id}, c.rank);
      members_[c.comm_id].insert(c.rank);
    }
  }
  std::vector<std::vector<const EventRecord*>> pending(n);  // per process: pending collectives
  for (size_t i = 0; i < n; ++i) {
    uint64_t last_comm = 0;
    int last_rank = -1;
    uint64_t* last_reached = nullptr;
    for (const EventRecord& e : set.ranks[i].events) {
      if (e.commId() == 0 || e.rank() < 0) continue;
      if (e.commId() != last_comm || e.rank() != last_rank) {  // mostly one communicator in a row
        process_of_.try_emplace({e.commId(), e.rank()}, i);
        rank_in_.try_emplace({i, e.commId()}, e.rank());
        members_[e.commId()].insert(e.rank());
        last_comm = e.commId();
        last_rank = e.rank();
        last_reached = &reached_[{i, e.commId()}];
      }
      if (format::isP2p(e.op) && !rejected(e) && e.state != EventState::kEmpty) {
        posted_[{e.commId(), e.op, e.rank(), e.peer()}].insert(e.op_seq);
      }
      if (!format::isCollective(e.op) || rejected(e)) continue;
      *last_reached = std::max(*last_reached, e.op_seq);
      if (isIncomplete(e)) pending[i].push_back(&e);
    }
  }
  waits_in_.reserve(n);
  creating_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    waits_in_.push_back(pendingGroupOps(set.ranks[i]));
    creating_.push_back(newestPendingCreation(set.ranks[i]));
  }
  pickBlocked(pending);
}

// Where each process is blocked: its oldest pending collective that waits for a member (one
// above the lowest seq every member reached); else its oldest pending one. In a group whose other
// ops completed on their peers, the op still waiting is the one that holds it.
void WaitGraph::pickBlocked(const std::vector<std::vector<const EventRecord*>>& pending) {
  std::map<uint64_t, uint64_t> all_reached;  // comm -> the lowest seq every member reached
  for (const auto& [comm, ranks] : members_) {
    uint64_t low = UINT64_MAX;
    for (int m : ranks) {
      const std::optional<size_t> j = processOf(comm, m);
      low = std::min(low, j ? reached(*j, comm) : uint64_t{0});
    }
    all_reached[comm] = low;
  }
  blocked_.assign(pending.size(), nullptr);
  for (size_t i = 0; i < pending.size(); ++i) {
    const EventRecord* waiting = nullptr;
    for (const EventRecord* e : pending[i]) {
      if (blocked_[i] == nullptr || e->enqueueNs() < blocked_[i]->enqueueNs()) blocked_[i] = e;
      if (all_reached[e->commId()] < e->op_seq &&
          (waiting == nullptr || e->enqueueNs() < waiting->enqueueNs())) {
        waiting = e;
      }
    }
    if (waiting != nullptr) blocked_[i] = waiting;
  }
}

// i waits for j: j holds a rank of the communicator i is blocked in and has not issued that seq
// (behind()). Each communicator's processes sorted by how far they got, so a blocked process looks
// only at those behind it (thousands of ranks blocked in one communicator would otherwise cost
// N^2).
void WaitGraph::addCollectiveWaits() {
  const size_t n = blocked_.size();
  std::map<uint64_t, std::vector<std::pair<uint64_t, size_t>>> by_progress;  // (reached, process)
  for (size_t i = 0; i < n; ++i) {
    if (blocked_[i] == nullptr) continue;
    const uint64_t comm = blocked_[i]->commId();
    auto [it, added] = by_progress.try_emplace(comm);
    if (!added) continue;
    for (int member : members(comm)) {
      if (const std::optional<size_t> j = processOf(comm, member)) {
        it->second.emplace_back(reached(*j, comm), *j);
      }
    }
    std::sort(it->second.begin(), it->second.end());
  }
  waits_for_.assign(n, {});
  kind_.assign(n, WaitKind::kCollectiveSlot);
  for (size_t i = 0; i < n; ++i) {
    if (blocked_[i] == nullptr) continue;
    for (const auto& [progress, j] : by_progress[blocked_[i]->commId()]) {
      if (progress >= blocked_[i]->op_seq) break;
      if (j != i) waits_for_[i].push_back(j);
    }
    std::sort(waits_for_[i].begin(), waits_for_[i].end());  // a stable search order
  }
}

// A process blocked in no collective but in a send or receive whose counterpart its peer has not
// posted waits for that peer: its first such call.
void WaitGraph::addSendReceiveWaits(const format::LoadedSet& set) {
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    if (blocked_[i] != nullptr) continue;
    for (const EventRecord& e : set.ranks[i].events) {
      if (!format::isP2p(e.op) || !isIncomplete(e) || e.peer() < 0) continue;
      const std::optional<size_t> peer = processOf(e.commId(), e.peer());
      if (!peer || *peer == i || counterpartPosted(e)) continue;
      blocked_[i] = &e;
      waits_for_[i] = {*peer};
      kind_[i] = WaitKind::kSendReceive;
      send_receive_ = true;
      break;
    }
  }
}

}  // namespace ncclrec::analyzer
