#include "hostnccl/group.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hostnccl/async.h"
#include "hostnccl/config.h"
#include "hostnccl/errors.h"
#include "hostnccl/profiler.h"
#include "hostnccl/reduce_ops.h"
#include "hostnccl/transfer.h"

namespace ncclrec::hostnccl {
namespace {

struct GroupState {
  int depth = 0;
  std::vector<OpArgs> ops;
};

thread_local GroupState tGroup;

bool isP2p(const OpArgs& a) { return a.kind == OpKind::kSend || a.kind == OpKind::kRecv; }

// Sends to self pair with receives from self in issue order, within the same group.
ncclResult_t matchSelf(Comm& c, const std::vector<const OpArgs*>& ops) {
  std::vector<const OpArgs*> sends, recvs;
  for (const OpArgs* a : ops) {
    if (a->root != c.rank) continue;
    (a->kind == OpKind::kSend ? sends : recvs).push_back(a);
  }
  if (sends.size() != recvs.size()) {
    return fail(ncclInvalidUsage,
                "comm %016llx rank %d: %zu send(s) to self but %zu receive(s) from self in one "
                "group; they would never complete",
                static_cast<unsigned long long>(c.hash), c.rank, sends.size(), recvs.size());
  }
  for (size_t i = 0; i < sends.size(); ++i) {
    size_t sb = sends[i]->count * dtypeSize(sends[i]->dtype);
    size_t rb = recvs[i]->count * dtypeSize(recvs[i]->dtype);
    if (sb != rb) {
      return fail(ncclInvalidUsage,
                  "comm %016llx rank %d: send to self of %zu bytes paired with "
                  "a receive of %zu bytes",
                  static_cast<unsigned long long>(c.hash), c.rank, sb, rb);
    }
    std::memmove(recvs[i]->recvbuff, sends[i]->sendbuff, sb);
    ++c.sendSeq[c.rank];
    ++c.recvSeq[c.rank];
  }
  return ncclSuccess;
}

// HOSTNCCL_STALL_KERNEL: the collective is launched and its kernel never starts; the call
// never returns (the process ends it).
[[noreturn]] void stallForever(const OpArgs& a) {
  prof::opStart(a, /*kernel=*/false);
  for (;;) pause();
}

// A collective between its profiler events.
ncclResult_t runProfiled(const OpArgs& a) {
  const Config& cfg = config();
  if (cfg.stallRank == a.comm->rank && a.comm->collSeq + 1 == cfg.stallAt) stallForever(a);
  prof::OpEvents e = prof::opStart(a);
  ncclResult_t rc;
  {
    prof::CurrentOpScope scope(e.op);
    rc = runCollective(a);
  }
  prof::opDone(a, e, rc == ncclSuccess);
  return rc;
}

// Runs one communicator's share of a group: posts all its point-to-point messages first (they
// never block), then the collectives in issue order, then waits for the messages.
ncclResult_t runOnComm(Comm& c, const std::vector<const OpArgs*>& ops) {
  if (ncclResult_t rc = c.enter(opKindName(ops.front()->kind)); rc != ncclSuccess) return rc;
  ncclResult_t rc = ncclSuccess;
  {
    const OpArgs* firstP2p = nullptr;
    for (const OpArgs* a : ops) {
      if (isP2p(*a)) {
        firstP2p = a;
        break;
      }
    }
    uint32_t p2pSeq = 0;
    if (firstP2p != nullptr) {
      p2pSeq =
          firstP2p->kind == OpKind::kSend ? c.sendSeq[firstP2p->root] : c.recvSeq[firstP2p->root];
    }
    Transfer p2p(c, firstP2p ? opKindName(firstP2p->kind) : "p2p", p2pSeq);
    // Profiler events: a p2p operation runs from its post until the group's messages are in.
    std::vector<prof::OpEvents> p2pEvents;
    for (const OpArgs* a : ops) {
      if (isP2p(*a)) p2pEvents.push_back(prof::opStart(*a));
    }
    if (firstP2p != nullptr) {
      rc = matchSelf(c, ops);
      if (rc == ncclSuccess) {
        size_t j = 0;
        for (const OpArgs* a : ops) {
          if (!isP2p(*a)) continue;
          void* event = p2pEvents[j++].op;
          if (a->root == c.rank) continue;
          prof::CurrentOpScope scope(event);
          postP2p(*a, p2p);
        }
      }
    }
    for (const OpArgs* a : ops) {
      if (rc != ncclSuccess) break;
      if (!isP2p(*a)) rc = runProfiled(*a);
    }
    if (rc == ncclSuccess) rc = p2p.wait();
    size_t i = 0;
    for (const OpArgs* a : ops) {
      if (isP2p(*a)) prof::opDone(*a, p2pEvents[i++], rc == ncclSuccess);
    }
  }
  c.leave();
  return rc;
}

ncclResult_t runAll(const std::vector<OpArgs>& ops) {
  // Group by communicator, keeping issue order inside each.
  std::vector<Comm*> comms;
  std::vector<std::vector<const OpArgs*>> perComm;
  for (const OpArgs& a : ops) {
    size_t i = 0;
    while (i < comms.size() && comms[i] != a.comm) ++i;
    if (i == comms.size()) {
      comms.push_back(a.comm);
      perComm.emplace_back();
    }
    perComm[i].push_back(&a);
  }
  if (comms.size() == 1) return runOnComm(*comms[0], perComm[0]);
  // Several communicators (e.g. one process driving all ranks of ncclCommInitAll): each one's
  // share must progress independently, or one would wait for another that never starts.
  std::vector<ncclResult_t> results(comms.size(), ncclSuccess);
  std::vector<std::thread> threads;
  size_t started = 1;
  try {
    for (; started < comms.size(); ++started) {
      threads.emplace_back(
          [&, started] { results[started] = runOnComm(*comms[started], perComm[started]); });
    }
  } catch (const std::exception& e) {
    for (auto& t : threads) t.join();
    return fail(ncclSystemError, "ncclGroupEnd: cannot start a thread: %s", e.what());
  }
  results[0] = runOnComm(*comms[0], perComm[0]);
  for (auto& t : threads) t.join();
  for (ncclResult_t r : results) {
    if (r != ncclSuccess) return r;
  }
  return ncclSuccess;
}

// Runs one operation issued outside a group, blocking until it is done.
ncclResult_t runNow(const OpArgs& a) {
  if (a.kind == OpKind::kSend || a.kind == OpKind::kRecv) {
    std::vector<const OpArgs*> one = {&a};
    return runOnComm(*a.comm, one);
  }
  if (ncclResult_t rc = a.comm->enter(opKindName(a.kind)); rc != ncclSuccess) return rc;
  ncclResult_t rc = runProfiled(a);
  a.comm->leave();
  return rc;
}

ncclResult_t runGroup();

}  // namespace

ncclResult_t groupStart() {
  ++tGroup.depth;
  return ncclSuccess;
}

ncclResult_t groupEnd() {
  if (tGroup.depth == 0) {
    return fail(ncclInvalidUsage, "ncclGroupEnd: not inside a group (no ncclGroupStart)");
  }
  if (--tGroup.depth > 0) return ncclSuccess;
  prof::groupEndEnter();
  ncclResult_t rc = runGroup();
  prof::groupDone();
  return rc;
}

ncclResult_t groupDiscard() {
  if (tGroup.depth == 0) {
    return fail(ncclInvalidUsage, "ncclGroupSimulateEnd: not inside a group");
  }
  if (--tGroup.depth == 0) {
    tGroup.ops.clear();
    prof::groupDone();
  }
  return ncclSuccess;
}

ncclResult_t submit(const OpArgs& in) {
  OpArgs a = in;
  prof::apiStart(a, tGroup.depth);
  if (tGroup.depth > 0) {
    tGroup.ops.push_back(a);
    prof::apiStop(a);
    return ncclSuccess;
  }
  // A lone call is NCCL's implicit group of one: its API event ends before the operation runs.
  prof::apiStop(a);
  prof::groupEndEnter();
  ncclResult_t rc = a.comm->blocking ? runNow(a)
                                     : launchAsync(
                                           {a.comm}, [a] { return runNow(a); }, opKindName(a.kind));
  prof::groupDone();
  return rc;
}

namespace {

// The outermost ncclGroupEnd: runs what the group queued.
ncclResult_t runGroup() {
  std::vector<OpArgs> ops;
  ops.swap(tGroup.ops);
  if (ops.empty()) return ncclSuccess;
  std::vector<Comm*> comms;
  size_t nonblocking = 0;
  for (const OpArgs& a : ops) {
    if (std::find(comms.begin(), comms.end(), a.comm) != comms.end()) continue;
    comms.push_back(a.comm);
    if (!a.comm->blocking) ++nonblocking;
  }
  if (nonblocking == 0) return runAll(ops);
  if (nonblocking != comms.size()) {
    return fail(ncclInvalidUsage,
                "ncclGroupEnd: blocking and nonblocking communicators in one group (NCCL refuses "
                "it too)");
  }
  auto shared = std::make_shared<std::vector<OpArgs>>(std::move(ops));
  return launchAsync(
      comms, [shared] { return runAll(*shared); }, "ncclGroupEnd");
}

}  // namespace

}  // namespace ncclrec::hostnccl
