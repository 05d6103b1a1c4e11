// Communicators being created, as the recordings show them: who joined each unique id, with which
// arguments, who made the id and where its bootstrap root is, which members have not joined, and
// whether the creation was made lazily by a collective. The facts of the creation rules
// (rules/comm_creation.cc) and, through missingMembers(), of the live detector (live/detector.cc).
// Pure functions over format's records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/callsite.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

// One process's newest call that joins a communicator by unique id (format::joinsById: init,
// init with config, scalable init) that had not succeeded when it was recorded: pending, or
// failed.
struct Joiner {
  size_t rank = 0;  // index into LoadedSet::ranks
  int global_rank = -1;
  const format::EventRecord* event = nullptr;
  const format::Comm* record = nullptr;  // its comm record; nullptr in recordings older than it
  int comm_rank = -1;                    // the rank it asked for
  int nranks = 0;                        // the size it asked for
  bool failed() const { return event->state == format::EventState::kFailed; }
};

// The joiners of one unique id, at least one of them still in the call.
struct Creation {
  uint64_t id = 0;              // the communicator id every joiner computed from the unique id
  std::vector<Joiner> joiners;  // ascending global rank, then pid
  int64_t first_ns = 0;         // when the first joined
  int64_t last_ns = 0;          // when the last joined
  std::string root;             // the id's bootstrap root ("10.0.0.1:41234"), "" when unknown
  // The ncclGetUniqueId call whose id this is, when a recording holds it.
  const format::RankData* maker = nullptr;
  const format::EventRecord* made_by = nullptr;

  // The size most joiners asked for (ties: the larger).
  int agreedSize() const;
  // The joiners still in the call.
  size_t pending() const;
};

// Every unique id that a recorded process is still joining, by the time its first joiner joined.
std::vector<Creation> pendingCreations(const format::LoadedSet& set);

// Whether the process is still in a call that joins a communicator by unique id.
bool joiningById(const format::RankData& rank);

// Which processes of the job should have joined as the comm ranks nobody joined.
struct Missing {
  std::vector<int> comm_ranks;    // in [0, nranks), joined by no process, ascending
  std::vector<int> global_ranks;  // the processes (global ranks) that were to be them, ascending
  // How they were found: every other process of the job (a communicator of all ranks, or as many
  // others as missing ranks), or the joiners' own rank mapping (global = a x comm + b).
  enum class How { kUnknown, kAllOthers, kMapping } how = How::kUnknown;
};

// The (a, b) of global rank = a x comm rank + b that every (global, comm) pair of `joined` fits,
// a >= 1 (a communicator of the whole job: 1, 0; a group of ranks 1, 3, 5, 7: 2, 1); nullopt
// when none does. Pairs of one comm rank fit any stride: `stride` is assumed then (what the
// other groups of the same communicators follow), else 1.
std::optional<std::pair<int, int>> rankMapping(const std::vector<std::pair<int, int>>& joined,
                                               std::optional<int> stride = std::nullopt);

// `joined`: (global rank, comm rank) of each joiner; `others`: the job's global ranks that did not
// join (recorded elsewhere, or never recorded), ascending; `world_size`: the job's size, or <= 0
// when unknown; `stride`: rankMapping()'s, known from sibling communicators.
Missing missingMembers(const std::vector<std::pair<int, int>>& joined, int nranks,
                       const std::vector<int>& others, int world_size,
                       std::optional<int> stride = std::nullopt);

// Lazy creation (PyTorch's ProcessGroupNCCL makes a group's communicator inside the group's first
// collective): the index into site.frames of the innermost frame of the creating call's stack
// whose function is named for a collective (all_reduce, allReduce, broadcast, barrier, ...): the
// call-site rule may stop inside it (at a helper only it calls) or outside it (it is plumbing);
// Python frames only when the stack has them (the native frames below are the interpreter's);
// nullopt when none is.
std::optional<size_t> lazyTrigger(const CallSite& site);

// Whether a function name (any language: "Group::allReduce(...)", "all_reduce",
// "ProcessGroupNCCL.allreduce") names a collective.
bool namesCollective(const std::string& function);

}  // namespace ncclrec::analyzer
