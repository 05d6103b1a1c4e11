// What a blocked rank's oldest incomplete op needs to complete: the detector's unit of reasoning
// (detector.h), per kind of op. Internal to watch/: detector.cc (collectives, sends and receives,
// splits) and creation_need.cc (a communicator's creation).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "live/snapshot.h"

namespace ncclrec::live::detail {

struct Need {
  bool cannot = false;        // it never will: a counterpart differs, is dead or closed the comm
  bool unknown = false;       // a counterpart this view does not show, or an op not paired here
  std::vector<size_t> deps;   // ranks (snapshot indexes) that have not issued their side yet
  std::vector<size_t> blame;  // ranks that make it impossible (dead, closed, different op)
  std::string reason;         // why it cannot complete, for the line
  // A creation's members that this view has no black box of (they made no NCCL call yet).
  std::vector<int> unrecorded;
  bool all_joined = false;  // a creation every member joined: only its bootstrap is left
};

inline bool dead(const RankEntry& r) { return r.liveness != Liveness::kAlive; }

inline std::string rankName(const Snapshot& s, size_t i) {
  return "rank " + std::to_string(s.ranks[i].global_rank);
}

// Rank `m` has not issued its side: impossible when it is dead, else a dependency.
void notArrived(const Snapshot& s, size_t m, Need* n);

// A pending call that joins a communicator by unique id (format::joinsById): the group `g` of
// its id holds the joiners (their records are claimed when the call begins; nullptr when no
// record was seen). Arguments that disagree cannot complete; members that have not joined are
// found as the analyzer finds them (analyzer::missingMembers) and are dependencies.
Need creationNeed(const Snapshot& s, size_t r, const OpView& op, const CommGroup* g);

}  // namespace ncclrec::live::detail
