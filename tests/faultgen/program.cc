// Names of the program's parts, group lookup, and walk(): what one rank issues.
#include "tests/faultgen/program.h"

namespace ncclrec::faultgen {

const char* opName(Op op) {
  switch (op) {
    case Op::kAllReduce:
      return "ncclAllReduce";
    case Op::kBroadcast:
      return "ncclBroadcast";
    case Op::kReduce:
      return "ncclReduce";
    case Op::kAllGather:
      return "ncclAllGather";
    case Op::kReduceScatter:
      return "ncclReduceScatter";
    case Op::kSend:
      return "ncclSend";
    case Op::kRecv:
      return "ncclRecv";
    case Op::kSplit:
      return "ncclCommSplit";
    case Op::kAbort:
      return "ncclCommAbort";
    case Op::kInit:
      return "ncclCommInitRank";
  }
  return "?";
}

const char* dtypeName(Dtype d) {
  switch (d) {
    case Dtype::kFloat32:
      return "float32";
    case Dtype::kInt32:
      return "int32";
    case Dtype::kFloat64:
      return "float64";
    case Dtype::kInt64:
      return "int64";
  }
  return "?";
}

const char* redopName(Redop r) {
  switch (r) {
    case Redop::kSum:
      return "sum";
    case Redop::kMax:
      return "max";
    case Redop::kMin:
      return "min";
    case Redop::kProd:
      return "prod";
  }
  return "?";
}

namespace {
constexpr const char* kFaultNames[kFaultKinds] = {
    "none",  "gated",        "skipped",      "size",        "dtype",        "redop", "root",
    "op",    "missing_send", "missing_recv", "exit",        "crash",        "stall", "split_subset",
    "abort", "init_skip",    "init_two_ids", "init_nranks", "init_dup_rank"};
}  // namespace

const char* faultName(FaultKind k) { return kFaultNames[static_cast<int>(k)]; }

bool parseFault(const std::string& name, FaultKind* out) {
  for (int i = 0; i < kFaultKinds; ++i) {
    if (name == kFaultNames[i]) {
      *out = static_cast<FaultKind>(i);
      return true;
    }
  }
  return false;
}

const std::vector<int>& groupOf(const Program& p, int comm, int rank, int* rank_in_group) {
  for (const auto& g : p.comms[comm].groups) {
    for (size_t i = 0; i < g.size(); ++i) {
      if (g[i] == rank) {
        *rank_in_group = static_cast<int>(i);
        return g;
      }
    }
  }
  *rank_in_group = 0;
  return p.comms[comm].groups.front();  // every rank is in one group of every family
}

Joining joiningOf(const Program& p, int comm, int rank) {
  Joining j;
  j.comm = comm;
  j.nranks = static_cast<int>(groupOf(p, comm, rank, &j.rank).size());
  j.maker = j.rank == 0;
  const Fault& f = p.fault;
  if (f.rank != rank || f.comm != comm) return j;
  switch (f.kind) {
    case FaultKind::kInitTwoIds:
      j.own_id = true;
      j.maker = true;
      break;
    case FaultKind::kInitNranks:
      j.nranks += 1;
      break;
    case FaultKind::kInitDupRank:
      j.rank = (j.rank + j.nranks - 1) % j.nranks;
      break;
    default:
      break;
  }
  return j;
}

namespace {

// What one rank has of the program's communicators as it runs.
struct Have {
  std::vector<bool> has;   // it makes (or has made) the comm and uses it
  std::vector<bool> lazy;  // made lazily, not yet: the next block that uses it creates it
};

// Issues `b`, first creating the lazily made communicators it is the first to use.
void emit(const Program& p, int rank, Block b, Have& h, Sink& sink) {
  for (const Call& c : b.calls) {
    if (!h.lazy[c.comm]) continue;
    h.lazy[c.comm] = false;
    b.creates.push_back(joiningOf(p, c.comm, rank));
  }
  sink.block(b);
}

// One step of one action on `rank`: the culprit's fault applied when `here`.
void runAction(const Program& p, const Action& act, int rank, bool here, Have& h, Sink& sink) {
  const std::vector<bool>& has = h.has;
  const Fault& f = p.fault;
  if (act.kind == ActionKind::kPipeline) {
    const int comm = act.block.calls.front().comm;
    if (!has[comm]) return;
    int in = 0;
    const int size = static_cast<int>(groupOf(p, comm, rank, &in).size());
    for (int m = 0; m < act.micro; ++m) {
      const bool hit = here && f.call == m;
      if (in > 0 && !(hit && f.kind == FaultKind::kMissingRecv)) emit(p, rank, act.block, h, sink);
      if (in < size - 1 && !(hit && f.kind == FaultKind::kMissingSend))
        emit(p, rank, act.send, h, sink);
    }
    return;
  }
  Block b;
  b.site = act.block.site;
  b.grouped = act.block.grouped;
  for (size_t i = 0; i < act.block.calls.size(); ++i) {
    const Call& c = act.block.calls[i];
    if (!has[c.comm]) continue;
    if (!here || f.call != static_cast<int>(i)) {
      b.calls.push_back(c);
      continue;
    }
    switch (f.kind) {
      case FaultKind::kSkipped:
      case FaultKind::kMissingSend:
      case FaultKind::kMissingRecv:
        break;
      default:
        b.calls.push_back(f.changed);
        break;
    }
  }
  if (!b.calls.empty()) emit(p, rank, b, h, sink);
}

}  // namespace

void walk(const Program& p, int rank, Sink& sink) {
  const Fault& f = p.fault;
  const bool culprit = f.kind != FaultKind::kNone && rank == f.rank;
  Have h{std::vector<bool>(p.comms.size(), true), std::vector<bool>(p.comms.size(), false)};
  std::vector<bool>& has = h.has;
  for (size_t k = 1; k < p.comms.size(); ++k) {
    const Comm& c = p.comms[k];
    const bool skips = culprit && f.comm == static_cast<int>(k) &&
                       (f.kind == FaultKind::kSplitSubset || f.kind == FaultKind::kInitSkip);
    if (!has[c.parent] || skips) {
      has[k] = false;
      continue;
    }
    switch (c.make) {
      case Make::kSplit:
        sink.split(static_cast<int>(k), c.site);
        break;
      case Make::kInit:
        sink.init(joiningOf(p, static_cast<int>(k), rank), c.site);
        break;
      case Make::kLazy:
        h.lazy[k] = true;
        break;
    }
  }
  for (int step = 0; step < p.steps; ++step) {
    for (size_t a = 0; a < p.body.size(); ++a) {
      const bool here = culprit && step == f.step && static_cast<int>(a) == f.action;
      if (here) {
        switch (f.kind) {
          case FaultKind::kExit:
            sink.exitNow();
            return;
          case FaultKind::kCrash:
            sink.crash();
            return;
          case FaultKind::kStall:
            sink.stall();
            return;
          case FaultKind::kAbort:
            sink.abortComm(f.comm, f.site);
            sink.exitNow();
            return;
          case FaultKind::kGated: {
            Block g;
            g.site = f.site;
            g.calls.push_back(Call{Op::kAllReduce, f.comm, 1, Dtype::kFloat32, Redop::kSum, 0, 0});
            if (has[f.comm]) emit(p, rank, g, h, sink);
            break;
          }
          default:
            break;
        }
      }
      runAction(p, p.body[a], rank, here, h, sink);
    }
  }
  sink.finish();
}

}  // namespace ncclrec::faultgen
