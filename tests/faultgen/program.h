// The random NCCL programs of the fault generator: a program is a world size, communicators
// (the world and ncclCommSplit families of it, possibly nested), a loop body of blocks, each block
// issued by one named call-site function, and one injected fault. generate() derives all of it
// from a seed, so every rank of a job builds the same program; walk() runs one rank's part of it
// against a Sink (the real NCCL calls, or a dry run that the --describe output is computed from).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncclrec::faultgen {

// kSplit, kInit and kAbort are issued by the Sink only (a comm's creation, the abort fault).
enum class Op {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kSend,
  kRecv,
  kSplit,
  kAbort,
  kInit,
};
// kInt64 is only the dtype fault's replacement for kFloat64 (the same length in bytes).
enum class Dtype { kFloat32, kInt32, kFloat64, kInt64 };
enum class Redop { kSum, kMax, kMin, kProd };

enum class FaultKind {
  kNone,
  kGated,
  kSkipped,
  kSize,
  kDtype,
  kRedop,
  kRoot,
  kOp,
  kMissingSend,
  kMissingRecv,
  kExit,
  kCrash,
  kStall,
  kSplitSubset,
  kAbort,
  // A communicator made from unique ids (Comm::make kInit or kLazy) that: the culprit never
  // creates (nor uses); the culprit joins with an id of its own; the culprit gives another size;
  // the culprit joins as another member's rank.
  kInitSkip,
  kInitTwoIds,
  kInitNranks,
  kInitDupRank,
};
inline constexpr int kFaultKinds = 19;
// A seed draws its fault from the first kMainFaultKinds kinds; the creation kinds come from a
// stream of their own (generate.cc), so adding them changed no earlier seed's draw.
inline constexpr int kMainFaultKinds = 15;
inline bool isCreationFault(FaultKind k) {
  return k == FaultKind::kInitSkip || k == FaultKind::kInitTwoIds || k == FaultKind::kInitNranks ||
         k == FaultKind::kInitDupRank;
}

const char* opName(Op op);
const char* dtypeName(Dtype d);
const char* redopName(Redop r);
const char* faultName(FaultKind k);
// The kind named `name` (as faultName writes it); false when there is none.
bool parseFault(const std::string& name, FaultKind* out);

// How comm k > 0 is made: split from its parent (ncclCommSplit, in its own function at the
// start), or created with ncclCommInitRank from a unique id per group (the group's first rank
// makes it): at the start in its own function, or lazily, in the function of the first block
// that uses it, as PyTorch's ProcessGroupNCCL makes a group's communicator at its first
// collective.
enum class Make { kSplit, kInit, kLazy };

// One communicator family: every rank is in exactly one group of it. Comm 0 is the world; comm k
// > 0 groups comm `parent`'s ranks by color (contiguous blocks or strides of the parent's ranks).
struct Comm {
  int parent = -1;
  bool strided = false;  // color = parent rank % ngroups, else parent rank * ngroups / size
  int ngroups = 1;
  int site = -1;  // the function that calls ncclCommSplit or ncclCommInitRank (comm k > 0)
  Make make = Make::kSplit;
  std::vector<std::vector<int>> groups;  // global ranks, ordered by rank in the group
};

// How one rank joins a communicator made from unique ids (Comm::make kInit or kLazy): normally
// with its group's id, as its rank in the group, of the group's size; a creation fault changes
// one of these on the culprit.
struct Joining {
  int comm = 0;
  bool own_id = false;  // it makes an id of its own and joins that (kInitTwoIds)
  int rank = 0;
  int nranks = 0;
  bool maker = false;  // it makes the id the group joins (the group's first rank)
};

// One NCCL call. `root` and `peer` are ranks in the group; for a send or receive, `peer` is a
// relative offset (+1 successor, -1 predecessor) in the group's ring.
struct Call {
  Op op = Op::kAllReduce;
  int comm = 0;
  int64_t count = 1;
  Dtype dtype = Dtype::kFloat32;
  Redop redop = Redop::kSum;
  int root = 0;
  int peer = 0;
};

// What one call-site function issues: its calls, in a ncclGroupStart/End when `grouped`, after
// the communicators it creates lazily (`creates`, filled by walk() on the first use).
// A pipeline is two blocks (receive, send) repeated `micro` times, stage by stage.
struct Block {
  int site = 0;
  bool grouped = false;
  std::vector<Call> calls;
  std::vector<Joining> creates;
};

enum class ActionKind { kCollective, kGroupedCollectives, kRing, kPipeline };

struct Action {
  ActionKind kind = ActionKind::kCollective;
  Block block;    // the pipeline's receive block for kPipeline
  Block send;     // kPipeline only
  int micro = 1;  // kPipeline only: micro-batches per step
};

struct Fault {
  FaultKind kind = FaultKind::kNone;
  int rank = -1;    // global rank of the culprit
  int step = -1;    // -1: at initialization (split)
  int action = -1;  // index in the body the fault hits (before it, for exit, crash, stall, abort)
  int call = -1;    // index of the call in the block (or micro-batch for p2p faults)
  int comm = -1;    // the split skipped, the comm aborted, the comm of the gated collective
  int site = -1;    // the injected function (gated, abort) or the faulty call's function
  Call changed;     // the culprit's version of the call (size, dtype, redop, root, op faults)
  std::string detail;
};

struct Program {
  uint64_t seed = 0;
  int world = 2;
  int steps = 3;
  std::vector<Comm> comms;
  std::vector<Action> body;
  Fault fault;
};

// The call-site functions (tests/faultgen/sites.cc), numbered 0..siteCount()-1, grouped by what
// they issue: sitesOf(kind) of each kind, the i-th of them numbered siteOf(kind, i).
enum class SiteKind {
  kSplit,
  kGated,
  kAbort,
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kGrouped,
  kRing,
  kPipelineRecv,
  kPipelineSend,
};
inline constexpr int kSiteKinds = 12;
int siteCount();
int sitesOf(SiteKind kind);
int siteOf(SiteKind kind, int i);
const char* siteName(int site);

// Builds the program of `seed` for `world` ranks (0: the seed picks 2..8); `force` != kNone picks
// that fault kind (kNone with force_healthy for a healthy program).
Program generate(uint64_t seed, int world, FaultKind force, bool force_healthy);

// The group of `comm` that global `rank` is in, and its rank there.
const std::vector<int>& groupOf(const Program& p, int comm, int rank, int* rank_in_group);

// What a rank does, in order. walk() calls these; Sink implementations issue NCCL or record.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void split(int comm, int site) = 0;  // make comm by splitting its parent (which exists)
  // Make comm from a unique id, in function `site` (Make::kInit; kLazy comms come in a block's
  // `creates`).
  virtual void init(const Joining& j, int site) = 0;
  virtual void block(const Block& b) = 0;  // only the calls this rank issues
  virtual void abortComm(int comm, int site) = 0;
  virtual void exitNow() = 0;  // return from main with 0, comms not destroyed
  virtual void crash() = 0;    // SIGKILL
  virtual void stall() = 0;    // sleep in host code forever
  virtual void finish() = 0;   // destroy the comms, end normally
};

// How global `rank` joins `comm` (made from unique ids), with the fault applied when it is the
// culprit of a creation fault on it.
Joining joiningOf(const Program& p, int comm, int rank);

// Runs global `rank`'s part of `p` with its fault (if this rank is the culprit) against `sink`.
// Returns early after exitNow/crash/stall.
void walk(const Program& p, int rank, Sink& sink);

}  // namespace ncclrec::faultgen
