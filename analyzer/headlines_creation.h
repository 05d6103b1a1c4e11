// The headlines of a communicator's creation whose members' arguments disagree
// (comm_init_mismatch) or that every member joined alike and that cannot connect
// (bootstrap_stuck): the words, from the verdict and the facts of the creation below. The other
// families are in headlines.h.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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

}  // namespace ncclrec::analyzer
