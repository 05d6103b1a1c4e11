// A job built op by op for the analyzer's unit tests: ranks, their streams of ops with one
// symbolized call site each, enqueue times one second apart. Test-only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "analyzer/diagnose.h"
#include "format/model.h"
#include "format/reader.h"

namespace ncclrec::analyzer::testing {

using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;

inline constexpr uint64_t kComm = 0xc0ffee0000000001ull;
inline constexpr uint64_t kOtherComm = 0xbeef000000000002ull;
inline constexpr int64_t kSec = 1'000'000'000;
inline constexpr int64_t kT0 = 1'700'000'000 * kSec;
inline constexpr int kFloat = 7;  // ncclFloat32
inline constexpr int kInt32 = 2;
inline constexpr int kSum = 0;
inline constexpr int kMax = 2;

// Call sites by name: each gets a symbolized one-frame stack in every rank that uses it, or,
// when `frames` is given, that stack (Python frames first, innermost first; native frames get the
// rank's load address).
struct Site {
  std::string function;
  int line;
  std::vector<format::Frame> frames = {};
};
inline const Site kTrain{"(anonymous namespace)::trainStep(ncclComm*, std::vector<float>&)", 27};
inline const Site kSave{"(anonymous namespace)::saveCheckpoint(ncclComm*, int)", 33};
inline const Site kLoss{"logLoss(ncclComm*)", 40};
// The calls of a two-rank communicator (kOtherComm) beside the world one (blame_test.cc,
// root_cause_test.cc).
inline const Site kPair{"pairReduce(ncclComm*, float*)", 52};
inline const Site kHandshake{"pairHandshake(ncclComm*, float*)", 57};

struct Op {
  Site site;
  uint64_t count = 4096;
  OpType op = OpType::kAllReduce;
  int dtype = kFloat;
  int redop = kSum;
  int root = -1;
  uint64_t comm = kComm;
};

class Job {
 public:
  explicit Job(int world) : ranks_(world) {
    for (int r = 0; r < world; ++r) {
      ranks_[r].global_rank = r;
      ranks_[r].world_size = world;
      ranks_[r].pid = 100 + r;
      ranks_[r].run_id = "run";
      ranks_[r].heartbeat_ns = kT0 + 100 * kSec;
    }
  }
  // Appends completed ops to `rank`'s stream, then optionally one still pending.
  Job& ops(int rank, const std::vector<Op>& ops, bool last_pending = false) {
    RankData& r = ranks_[rank];
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& o = ops[i];
      EventRecord e;
      e.index = r.events.size();
      e.op = o.op;
      e.setCommId(o.comm);
      e.op_seq = ++seq_[rank][o.comm];
      e.count = o.count;
      e.dtype = o.dtype;
      e.redop = o.redop;
      e.setPeer(o.root);
      e.setRank(rank);
      e.setNranks(static_cast<int>(ranks_.size()));
      e.setStackId(stackFor(r, o.site));
      e.setEnqueueNs(kT0 + static_cast<int64_t>(e.index) * kSec);
      const bool pending = last_pending && i + 1 == ops.size();
      e.state = pending ? EventState::kEnqueued : EventState::kCompleted;
      e.setEndNs(pending ? 0 : e.enqueueNs() + 1000);
      r.events.push_back(e);
      r.events_total = r.events.size();
    }
    return *this;
  }
  // Gives `rank` the entry a member's comm table holds for `comm` (as the builder numbers comm
  // ranks: its global rank, of `nranks`), as a rank shows a communicator it created even where it
  // made no call.
  Job& created(int rank, uint64_t comm, int nranks) {
    format::Comm c;
    c.comm_id = comm;
    c.rank = rank;
    c.nranks = nranks;
    c.global_rank = rank;
    ranks_[rank].comms.push_back(c);
    return *this;
  }
  // Leaves `rank`'s event `back` places before its last (1: the one before it) pending too: a
  // call of the group its last one closes.
  Job& pendingToo(int rank, size_t back) {
    EventRecord& e = ranks_[rank].events[ranks_[rank].events.size() - 1 - back];
    e.state = EventState::kEnqueued;
    e.setEndNs(0);
    return *this;
  }
  RankData& rank(int r) { return ranks_[r]; }
  format::LoadedSet set() const { return format::LoadedSet{ranks_, {}, {}}; }
  Verdict diagnose() const { return analyzer::diagnose(set()); }

 private:
  static uint32_t stackFor(RankData& r, const Site& s) {
    const uint64_t bias = 0x5550000 + 0x1000 * static_cast<uint64_t>(r.global_rank);
    if (!s.frames.empty()) {
      std::vector<format::Frame> frames = s.frames;
      for (format::Frame& f : frames) f.address = f.python ? 0 : bias + f.module_offset;
      for (const auto& [id, st] : r.stacks) {
        if (st.frames == frames) return id;
      }
      const auto id = static_cast<uint32_t>(r.stacks.size());
      r.stacks[id] = format::Stack{id, std::move(frames), true};
      return id;
    }
    for (const auto& [id, st] : r.stacks) {
      if (st.frames[0].function == s.function && st.frames[0].line == s.line) return id;
    }
    format::Stack st;
    st.id = static_cast<uint32_t>(r.stacks.size());
    // The same binary at a different load address in each process.
    st.frames.push_back(
        {0x5550000 + 0x1000 * static_cast<uint64_t>(r.global_rank) + static_cast<uint64_t>(s.line),
         "/opt/train", static_cast<uint64_t>(s.line), s.function, "train.cc", s.line});
    st.symbolized = true;
    r.stacks[st.id] = st;
    return st.id;
  }
  std::vector<RankData> ranks_;
  std::map<int, std::map<uint64_t, uint64_t>> seq_;
};

// A one-element all-reduce from `site` on kOtherComm.
inline Op pairOp(const Site& site) {
  Op o{site, 1};
  o.comm = kOtherComm;
  return o;
}

// Numbers a rank's calls as NCCL does: collectives per communicator, sends and receives per
// communicator, peer and direction (the builder numbers every call of a communicator in one
// sequence). Clears the peer of collectives (the builder keeps their root there).
inline void numberLikeNccl(RankData& r) {
  std::map<std::tuple<uint64_t, OpType, int>, uint64_t> per_peer;
  std::map<uint64_t, uint64_t> collectives;
  for (EventRecord& e : r.events) {
    e.op_seq = format::isP2p(e.op) ? ++per_peer[{e.commId(), OpType{e.op}, int{e.peer()}}]
                                   : ++collectives[e.commId()];
    if (!format::isP2p(e.op)) e.setPeer(-1);
  }
}

inline std::vector<Op> repeat(const Op& op, int n) { return std::vector<Op>(n, op); }
inline std::vector<Op> concat(std::vector<Op> a, const std::vector<Op>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace ncclrec::analyzer::testing
