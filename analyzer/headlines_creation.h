// The headlines of a communicator's creation: a member that never joined (comm_member_missing, or
// the rank_exited / rank_crashed / rank_gated_collective it turns out to be), one communicator
// given several ids (comm_id_mismatch), members' arguments that disagree (comm_init_mismatch), a
// bootstrap that cannot connect (bootstrap_stuck), ranks waiting in a creation no stream shows
// (undecided): the words, from the verdict and the facts of the creation below. The other
// families are in headlines.h.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/headlines.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer {

// A creation as a headline names it, by its first joiner's call: "ncclCommInitRank of comm
// 1a2b3c4d (4 ranks) from buildEvalGroup() main.cc:24".
struct CreationRef {
  format::OpType op = format::OpType::kUnknown;
  uint64_t comm_id = 0;
  int size = 0;  // the size its members agree on
  CallSite site;
};
std::string creationPhrase(const CreationRef& c);

// Who made a creation's unique id: "made by rank 0 (ncclGetUniqueId from initProcessGroup()
// main.cc:25)", with its pid when another process runs as the same rank; "made by no recorded
// rank".
struct IdMaker {
  bool recorded = false;
  int rank = -1;
  bool shared = false;  // another process runs as `rank`: name `pid` too
  int pid = 0;
  CallSite site;  // its ncclGetUniqueId
};
std::string madeByPhrase(const IdMaker& m);

// Ranks that asked for a rank outside [0, nranks) (the verdict: those ranks, and the members that
// wait): "rank 3 asked for rank 4 of 4 in <creation>, which NCCL refused (invalid argument); ranks
// 0-2 wait in it: a rank of a communicator is 0 to nranks-1".
std::string rankOutOfRangeHeadline(const Verdict& v, const CreationRef& c, int asked, int nranks,
                                   bool refused);

// Members that pass different sizes: "<creation>: ranks 0-2 pass nranks 4, rank 3 passes nranks 8;
// the bootstrap stops at the first size that differs; ranks 0-2 wait in it: pass the same nranks
// (the job's size) on every member". `sizes`: each size with the ranks that pass it, ascending.
std::string sizesDisagreeHeadline(const Verdict& v, const CreationRef& c,
                                  const std::vector<std::pair<std::vector<int>, int>>& sizes,
                                  bool majority);

// A process that joined as a comm rank another one joined as too.
struct Claim {
  int rank = -1;  // its global rank
  int pid = 0;
  std::string host;
  int comm_rank = -1;  // the rank it joined as
};
// "<creation>: rank 3 (pid 12 on a) as rank 1, which another process joined as too; no process
// joined as rank 3; the bootstrap stops at the second claim; ...: each process needs its own
// rank (LOCAL_RANK where RANK was meant?)"; `free` the comm ranks nobody took.
std::string rankClaimedTwiceHeadline(const Verdict& v, const CreationRef& c,
                                     const std::vector<Claim>& odd, const std::vector<int>& free);

// One of the processes that run as one global rank: where it joined, as which rank, whose id.
struct SharedRankClaim {
  int pid = 0;
  std::string host;
  CreationRef creation;
  int comm_rank = -1;
  IdMaker maker;
};
// "2 processes run as rank 1: pid 12 on a in <creation> as rank 1 (id <made by>); pid 13 on b in
// ...; no process runs as rank 3: each process needs its own RANK (...)"; the verdict's rank is
// the one run twice, `absent` the job's ranks no process runs as.
std::string sharedRankHeadline(const Verdict& v, size_t processes,
                               const std::vector<SharedRankClaim>& claims,
                               const std::vector<int>& absent);

// bootstrap_stuck (the verdict: the members, waiting): "every member joined <creation> (ranks
// 0-3, the last 4.0s ago) and it does not finish: the bootstrap cannot connect to the id's root
// 10.0.0.1:2345 (<made by>); network settings: NCCL_SOCKET_IFNAME=eth1 on ranks 0-1; no NCCL
// network setting on ranks 2-3; check that ...".
struct BootstrapStall {
  int64_t last_join_ago_ns = 0;
  bool calls_failed = false;  // "their calls failed" rather than "it does not finish"
  std::string root;           // the id's root address, "" when not recorded
  IdMaker maker;
  // Each NCCL network setting ("" for none) with the ranks that run with it, in the order of
  // each setting's lowest rank.
  std::vector<std::pair<std::string, std::vector<int>>> settings;
};
std::string bootstrapStuckHeadline(const Verdict& v, const CreationRef& c, const BootstrapStall& s);

// A creation made lazily, at the first collective on the communicator (PyTorch's default):
// " (created lazily, by the first collective on it: Group::allReduce() main.cc:27, called from
// logMetrics() main.cc:46)"; "" when it is not lazy.
struct LazyCreation {
  bool lazy = false;
  bool by_this_call = false;  // the call site is that collective: "by this first collective on it"
  CallSite trigger;           // the collective (its frame)
  bool has_caller = false;
  CallSite caller;  // the frame that called it
};
std::string lazyPhrase(const LazyCreation& l);

// Where a member that did not join a creation is (the headline and the creation table's cells).
struct Whereabouts {
  enum class Kind {
    kBlocked,  // "is blocked in ncclAllReduce #4 on comm 81fd1b08 from trainStep() ...": `in`
    kHost,     // "is in host code: <last op>"
    kExited,   // "exited; <last op>"
    kCrashed,  // "crashed (SIGSEGV); <last op>": `signal`
    kDead,     // "died without an exit mark (killed from outside); <last op>"
    kNoData,   // "has no recording (it never started, or started without the recorder)"
  };
  Kind kind = Kind::kNoData;
  int signal = 0;
  LastOp last;
  OpOn in;  // kBlocked: a collective, send or receive (numbered), or a creation
};
std::string whereaboutsPhrase(const Whereabouts& w);

// rank_gated_collective (the verdict: the joiners, and the members that never began it, waiting):
// "rank 0 alone began <creation><lazy>; every member of a communicator must create it, and ranks
// 1-3 never did".
std::string creationAloneHeadline(const Verdict& v, const CreationRef& c, const LazyCreation& l);

// comm_member_missing, rank_exited, rank_crashed (the verdict: the members that never joined, the
// joiners waiting): "rank 3 never joined <creation><lazy>: rank 3 exited; <last op>; ranks 0-2
// wait in the creation for it; every member of a communicator must create it". `away`: each
// culprit's global rank and where it is.
std::string neverJoinedHeadline(const Verdict& v, const CreationRef& c, const LazyCreation& l,
                                const std::vector<std::pair<int, Whereabouts>>& away);

// comm_id_mismatch: "one communicator of 4 ranks (<creation>) was given 2 unique ids, and none can
// fill: ranks 0-1 joined the id made by rank 0 (...); ranks 2-3 joined the id made by rank 2
// (...); no id is shared by a majority of its members: one rank must make the id and every member
// use that one". `ids`: each id's joiners and maker, largest group first.
std::string severalIdsHeadline(const CreationRef& c,
                               const std::vector<std::pair<std::vector<int>, IdMaker>>& ids,
                               bool majority);

// undecided, ranks in a creation that no collective stream shows (the verdict: its op and
// communicator): "ranks 0-2 wait in ncclCommInitRank on comm 1a2b3c4d for a communicator of 4
// ranks; no data for rank 3".
std::string stuckCreatingHeadline(const Verdict& v, const std::vector<int>& waiting, int nranks,
                                  const std::vector<int>& no_data);

}  // namespace ncclrec::analyzer
