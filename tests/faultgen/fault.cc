// pickFault(): where a fault of one kind goes in a generated program (culprit rank, step, action,
// call) and what it changes. A fault hits step 2 or later, so that every collective slot it
// touches has been issued, and followed, the same way on every rank before: the ranks that keep
// doing so are the norm, also when a communicator has only two ranks.
#include <algorithm>
#include <string>
#include <vector>

#include "tests/faultgen/program.h"

namespace ncclrec::faultgen {
namespace {

struct Spot {
  int action;
  int call;
};

bool isCollective(Op op) { return op != Op::kSend && op != Op::kRecv; }

// Every collective call of the body that `ok` accepts.
template <typename Ok>
std::vector<Spot> collectiveSpots(const Program& p, Ok ok) {
  std::vector<Spot> out;
  for (size_t a = 0; a < p.body.size(); ++a) {
    const auto& calls = p.body[a].block.calls;
    for (size_t c = 0; c < calls.size(); ++c) {
      if (isCollective(calls[c].op) && ok(calls[c])) {
        out.push_back({static_cast<int>(a), static_cast<int>(c)});
      }
    }
  }
  return out;
}

int rankInGroup(const Program& p, int comm, int rank, int* size) {
  int in = 0;
  *size = static_cast<int>(groupOf(p, comm, rank, &in).size());
  return in;
}

// The p2p spot and culprit of a missing send (`send`) or receive: in a ring any rank; in a
// pipeline a stage that sends (not the last) or receives (not the first).
bool p2pFault(Program& p, bool send, uint64_t salt) {
  std::vector<Spot> spots;
  for (size_t a = 0; a < p.body.size(); ++a) {
    const ActionKind k = p.body[a].kind;
    if (k == ActionKind::kRing || k == ActionKind::kPipeline) {
      spots.push_back({static_cast<int>(a), 0});
    }
  }
  if (spots.empty()) return false;
  const Spot s = spots[salt % spots.size()];
  const Action& act = p.body[s.action];
  const int comm = act.block.calls.front().comm;
  for (int i = 0; i < p.world; ++i) {
    const int rank = static_cast<int>((salt / 7 + i) % p.world);
    int size = 0;
    const int in = rankInGroup(p, comm, rank, &size);
    if (act.kind == ActionKind::kPipeline && (send ? in == size - 1 : in == 0)) continue;
    p.fault.rank = rank;
    p.fault.action = s.action;
    p.fault.comm = comm;
    if (act.kind == ActionKind::kRing) {
      p.fault.call = send ? 0 : 1;
      p.fault.site = act.block.site;
      p.fault.detail = send ? "posts no send to its successor in the ring"
                            : "posts no receive from its predecessor in the ring";
    } else {
      p.fault.call = static_cast<int>((salt / 13) % act.micro);  // the micro-batch
      p.fault.site = send ? act.send.site : act.block.site;
      p.fault.detail = std::string(send ? "does not send micro-batch "
                                        : "does not receive "
                                          "micro-batch ") +
                       std::to_string(p.fault.call) + " of " + std::to_string(act.micro);
    }
    return true;
  }
  return false;
}

// The culprit's version of the call at `s` for `kind`, and the fault's one-line detail.
void mutate(Fault& f, const Call& c, uint64_t salt) {
  f.changed = c;
  Call& x = f.changed;
  switch (f.kind) {
    case FaultKind::kSize:
      x.count = c.count / 2;
      f.detail = "count " + std::to_string(x.count) + " instead of " + std::to_string(c.count);
      break;
    case FaultKind::kDtype:
      x.dtype = c.dtype == Dtype::kFloat32 ? Dtype::kInt32
                : c.dtype == Dtype::kInt32 ? Dtype::kFloat32
                                           : Dtype::kInt64;
      f.detail = std::string(dtypeName(x.dtype)) + " instead of " + dtypeName(c.dtype);
      break;
    case FaultKind::kRedop:
      x.redop = c.redop == Redop::kSum ? Redop::kMax : Redop::kSum;
      f.detail = std::string(redopName(x.redop)) + " instead of " + redopName(c.redop);
      break;
    case FaultKind::kRoot:
      x.root = c.root + 1;
      f.detail = "root " + std::to_string(x.root) + " instead of " + std::to_string(c.root);
      break;
    case FaultKind::kOp: {
      constexpr Op kOps[] = {Op::kAllReduce, Op::kBroadcast, Op::kReduce, Op::kAllGather,
                             Op::kReduceScatter};
      int i = 0;
      while (kOps[i] != c.op) ++i;
      x.op = kOps[(i + 1 + salt % 4) % 5];
      x.redop = Redop::kSum;
      x.root = 0;
      f.detail = std::string(opName(x.op)) + " instead of " + opName(c.op);
      break;
    }
    default:  // kSkipped
      f.detail = std::string("skips ") + opName(c.op);
      break;
  }
}

// Whether `c`, at the fault's step, is the last collective of the program on its communicator.
bool lastOnComm(const Program& p, const Call& c) {
  if (p.fault.step < p.steps - 1) return false;
  bool after = false;
  for (const Action& a : p.body) {
    for (const Call& x : a.block.calls) {
      if (&x == &c) {
        after = true;
      } else if (after && x.comm == c.comm && isCollective(x.op)) {
        return false;
      }
    }
  }
  return true;
}

// A collective call changed or left out: the spot, among those the kind can hit.
bool collectiveFault(Program& p, FaultKind kind, uint64_t at, uint64_t salt) {
  Fault& f = p.fault;
  // A collective call changed or left out. Skipping needs a second collective on that
  // communicator, and one after the skipped one: else skipping cannot be told from stopping
  // early (a rank that skips the program's last all-reduce has simply finished before the
  // others).
  std::vector<int> per_comm(p.comms.size(), 0);
  for (const Spot& s : collectiveSpots(p, [](const Call&) { return true; })) {
    ++per_comm[p.body[s.action].block.calls[s.call].comm];
  }
  const auto spots = collectiveSpots(p, [&](const Call& c) {
    switch (kind) {
      case FaultKind::kSkipped:
        return per_comm[c.comm] >= 2 && !lastOnComm(p, c);
      case FaultKind::kRedop:
        return c.op == Op::kAllReduce || c.op == Op::kReduce || c.op == Op::kReduceScatter;
      case FaultKind::kRoot: {
        size_t m = p.comms[c.comm].groups.front().size();
        for (const auto& g : p.comms[c.comm].groups) m = std::min(m, g.size());
        return (c.op == Op::kBroadcast || c.op == Op::kReduce) && c.root + 1 < static_cast<int>(m);
      }
      default:
        return true;
    }
  });
  if (spots.empty()) return false;
  const Spot s = spots[at % spots.size()];
  f.action = s.action;
  f.call = s.call;
  f.site = p.body[s.action].block.site;
  f.comm = p.body[s.action].block.calls[s.call].comm;
  mutate(f, p.body[s.action].block.calls[s.call], salt);
  return true;
}

// The first action using `comm` (a lone collective or a group of collectives); -1 when none.
int firstAction(const Program& p, int comm) {
  for (size_t a = 0; a < p.body.size(); ++a) {
    for (const Call& c : p.body[a].block.calls) {
      if (c.comm == comm) return static_cast<int>(a);
    }
  }
  return -1;
}

bool usesWorld(const Program& p) {
  for (const Action& a : p.body) {
    for (const Call& c : a.block.calls) {
      if (c.comm == 0) return true;
    }
    for (const Call& c : a.send.calls) {
      if (c.comm == 0) return true;
    }
  }
  return false;
}

// A creation fault on a communicator made from unique ids whose groups have `least` ranks or
// more; the culprit is a member of a group of that size that is not the group's first rank (the
// one that makes its id). The fault hits the creation: at the start, or at the first use of a
// communicator made lazily, in the function that makes it.
bool creationFault(Program& p, FaultKind kind, uint64_t at) {
  Fault& f = p.fault;
  const int least = kind == FaultKind::kInitTwoIds || kind == FaultKind::kInitDupRank ? 3 : 2;
  // A rank that skips a creation must still meet the others somewhere (the world), or it could
  // finish the program without them, which would read as an exit.
  if (kind == FaultKind::kInitSkip && !usesWorld(p)) return false;
  std::vector<int> comms;
  for (size_t k = 1; k < p.comms.size(); ++k) {
    const Comm& c = p.comms[k];
    if (c.make == Make::kSplit) continue;
    for (const auto& g : c.groups) {
      if (static_cast<int>(g.size()) >= least) {
        comms.push_back(static_cast<int>(k));
        break;
      }
    }
  }
  if (comms.empty()) return false;
  f.comm = comms[at % comms.size()];
  const Comm& c = p.comms[f.comm];
  std::vector<int> culprits;
  for (const auto& g : c.groups) {
    if (static_cast<int>(g.size()) < least) continue;
    for (size_t i = 1; i < g.size(); ++i) culprits.push_back(g[i]);
  }
  f.rank = culprits[(at >> 8) % culprits.size()];
  if (c.make == Make::kLazy) {
    f.step = 0;
    f.action = firstAction(p, f.comm);
    f.site = p.body[f.action].block.site;
  } else {
    f.step = -1;
    f.site = c.site;
  }
  int in = 0;
  const int n = static_cast<int>(groupOf(p, f.comm, f.rank, &in).size());
  switch (kind) {
    case FaultKind::kInitSkip:
      f.detail = "never creates (nor uses) a communicator its group makes from a unique id";
      break;
    case FaultKind::kInitTwoIds:
      f.detail = "makes a unique id of its own and joins it, not its group's";
      break;
    case FaultKind::kInitNranks:
      f.detail = "passes nranks " + std::to_string(n + 1) + " instead of " + std::to_string(n);
      break;
    default:
      f.detail =
          "joins as rank " + std::to_string((in + n - 1) % n) + " instead of " + std::to_string(in);
      break;
  }
  f.detail += std::string(c.make == Make::kLazy ? " (made lazily)" : "");
  return true;
}

}  // namespace

bool pickFault(Program& p, FaultKind kind, uint64_t salt) {
  Fault& f = p.fault;
  f = Fault{};
  f.kind = kind;
  if (kind == FaultKind::kNone) return true;
  f.rank = static_cast<int>(salt % static_cast<uint64_t>(p.world));
  f.step = 2 + static_cast<int>((salt >> 8) % static_cast<uint64_t>(p.steps - 2));
  const uint64_t at = salt >> 16;
  switch (kind) {
    case FaultKind::kGated:
      f.action = static_cast<int>(at % p.body.size());
      f.comm = static_cast<int>((at >> 8) % p.comms.size());
      f.site = siteOf(SiteKind::kGated, static_cast<int>((at >> 16) % sitesOf(SiteKind::kGated)));
      f.detail = "issues an extra ncclAllReduce of 1 float32";
      return true;
    case FaultKind::kExit:
    case FaultKind::kCrash:
    case FaultKind::kStall:
    case FaultKind::kAbort:
      f.action = static_cast<int>(at % p.body.size());
      f.site =
          kind == FaultKind::kAbort ? siteOf(SiteKind::kAbort, 0) : p.body[f.action].block.site;
      f.comm = p.body[f.action].block.calls.front().comm;
      f.detail = kind == FaultKind::kExit    ? "returns from main"
                 : kind == FaultKind::kCrash ? "is killed (SIGKILL)"
                 : kind == FaultKind::kStall ? "sleeps forever in host code"
                                             : "aborts the communicator, then exits";
      return true;
    case FaultKind::kSplitSubset:
      if (p.comms.size() < 2) return false;
      f.step = -1;
      f.comm = 1 + static_cast<int>(at % (p.comms.size() - 1));
      f.site = p.comms[f.comm].site;
      f.detail = "does not call ncclCommSplit (nor use what it would have made)";
      return true;
    case FaultKind::kMissingSend:
    case FaultKind::kMissingRecv:
      return p2pFault(p, kind == FaultKind::kMissingSend, salt);
    case FaultKind::kInitSkip:
    case FaultKind::kInitTwoIds:
    case FaultKind::kInitNranks:
    case FaultKind::kInitDupRank:
      return creationFault(p, kind, at);
    default:
      break;
  }
  return collectiveFault(p, kind, at, salt);
}

}  // namespace ncclrec::faultgen
