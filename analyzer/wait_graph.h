// The job's wait-for graph, a fact of the recordings (docs/analyzer.md, "To add a rule"): which
// process waits in which NCCL call for which other process, and how each process that waits for
// no one stands (in host code, exited, crashed, silent, not running). Built once per analysis by
// the Engine (Engine::waits()); the rules that walk waits read it and choose which kinds of edge
// they follow: the wait cycle across communicators (rules/wait_cycle.cc, cycle_blame.cc), the
// chain of waits to the rank that ends it and where a rank waited for stands (truncation.cc), the
// peer of a send or receive and whether its collective waits for the waiting rank (p2p_stop.cc,
// p2p_mismatch.cc, p2p_blame.cc, group_peer_skip.cc), where an absent creation member stands
// (comm_creation.cc), the members of a communicator that issued no collective there
// (root_cause.cc). Internal to the analyzer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "format/reader.h"

namespace ncclrec::analyzer {

// How a process waits for another.
enum class WaitKind {
  // In a collective, for a member of its communicator that has not issued that seq: NCCL pairs
  // collectives by issue order per communicator.
  kCollectiveSlot,
  // In a send or receive, for the peer that has not posted its counterpart (same communicator,
  // pair and per-peer seq).
  kSendReceive,
};

// How a process stands, from the Engine's liveness facts (engine.h dead(), whyNotRunning()), in
// this order: exited beats crashed beats silent beats not running.
enum class Liveness {
  kRunning,     // nothing says it stopped
  kNotRunning,  // its process is there but runs none of its code (stopped, uninterruptible sleep)
  kSilent,      // its black box stopped beating and the launcher did not see it still there
  kCrashed,     // a fatal signal
  kExited,      // it left the program
};

class WaitGraph {
 public:
  // `liveness`: one per process (index into set.ranks).
  WaitGraph(const format::LoadedSet& set, std::vector<Liveness> liveness);

  // The process (index into set.ranks) that holds rank `comm_rank` of `comm`, from the comm
  // records first, then the events; the first process that shows it. nullopt when none does.
  std::optional<size_t> processOf(uint64_t comm, int comm_rank) const;
  // The global rank of processOf(comm, comm_rank); -1 when no recording shows that rank.
  int globalRankOf(uint64_t comm, int comm_rank) const;
  // The comm rank the process holds in `comm` (its comm record, else its first event there);
  // nullopt when it holds none.
  std::optional<int> rankIn(size_t process, uint64_t comm) const;
  // The comm ranks of `comm` that some process shows (its comm record or its events).
  const std::set<int>& members(uint64_t comm) const;
  // The highest seq of a collective the process issued on `comm` (refused calls left out); 0
  // when none.
  uint64_t reached(size_t process, uint64_t comm) const;
  // Whether the process issued collective `seq` on `comm`: it made a call there (any event) and
  // reached() is at least `seq`.
  bool issued(size_t process, uint64_t comm, uint64_t seq) const;
  // Whether the process holds a rank of `comm` and has not issued collective `seq` there: a call
  // waiting in that collective waits for it.
  bool owes(size_t process, uint64_t comm, uint64_t seq) const {
    return rankIn(process, comm).has_value() && reached(process, comm) < seq;
  }
  // The processes holding a rank of `comm`, other than `self`, that have not issued collective
  // `seq` there: whom `self` waits for in it (edges of kind kCollectiveSlot). Ascending.
  std::vector<size_t> behind(uint64_t comm, uint64_t seq, size_t self) const;
  // Whether the counterpart of send or receive `e` (same communicator, pair, per-peer seq, the
  // other direction) was posted by its peer.
  bool counterpartPosted(const format::EventRecord& e) const;

  size_t size() const { return liveness_.size(); }
  Liveness liveness(size_t process) const { return liveness_[process]; }
  // Exited, crashed or silent: gone (Engine::dead()).
  bool gone(size_t process) const { return liveness_[process] >= Liveness::kSilent; }
  // The calls the process waits in (rank_ops.h pendingGroupOps: its newest pending collective or
  // send/receive and the rest of its unfinished group); empty: it is in no NCCL call.
  const std::vector<const format::EventRecord*>& waitsIn(size_t process) const {
    return waits_in_[process];
  }
  // The communicator creation (format::isCommCreation) the process is still in, nullptr when none.
  const format::EventRecord* creating(size_t process) const { return creating_[process]; }
  // Where the process is blocked: the newest of its calls in waitsIn() and creating(); nullptr
  // when it is in no NCCL call (in host code, or gone).
  const format::EventRecord* newestWait(size_t process) const;
  // The one call the process is blocked in, for a cycle: its oldest pending collective that waits
  // for a member (else its oldest pending one); with none, its first send or receive whose
  // counterpart is missing. nullptr when neither.
  const format::EventRecord* blocked(size_t process) const { return blocked_[process]; }
  // Whom it waits for in blocked(), ascending; of kind kindOf().
  const std::vector<size_t>& waitsFor(size_t process) const { return waits_for_[process]; }
  WaitKind kindOf(size_t process) const { return kind_[process]; }
  // Whether any process waits in a send or receive (an edge of kind kSendReceive).
  bool anySendReceiveWait() const { return send_receive_; }

 private:
  void gather(const format::LoadedSet& set);
  void pickBlocked(const std::vector<std::vector<const format::EventRecord*>>& pending);
  void addCollectiveWaits();
  void addSendReceiveWaits(const format::LoadedSet& set);

  std::vector<Liveness> liveness_;
  std::vector<int> global_rank_;                             // per process
  std::map<std::pair<uint64_t, int>, size_t> process_of_;    // (comm, comm rank) -> process
  std::map<std::pair<size_t, uint64_t>, uint64_t> reached_;  // (process, comm) -> highest seq
  std::map<uint64_t, std::set<int>> members_;                // comm -> comm ranks
  std::map<std::pair<size_t, uint64_t>, int> rank_in_;       // (process, comm) -> comm rank
  // (comm, op, comm rank, peer comm rank) -> the per-peer seqs of the sends or receives it posted
  std::map<std::tuple<uint64_t, format::OpType, int, int>, std::set<uint64_t>> posted_;
  std::vector<std::vector<const format::EventRecord*>> waits_in_;
  std::vector<const format::EventRecord*> creating_;
  std::vector<const format::EventRecord*> blocked_;
  std::vector<std::vector<size_t>> waits_for_;
  std::vector<WaitKind> kind_;
  bool send_receive_ = false;
};

}  // namespace ncclrec::analyzer
