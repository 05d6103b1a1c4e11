#include "analyzer/rules/device_stalled.h"

#include <algorithm>
#include <string>
#include <vector>

#include "analyzer/connections.h"
#include "analyzer/phrases.h"
#include "analyzer/rank_ops.h"
#include "analyzer/rules/inside_one_op.h"

namespace ncclrec::analyzer::engine {
namespace {

// One rank's kernel for the op it waits in, from its communicator's kernel record.
struct Kernel {
  bool known = false;  // the record's newest launched op is that op
  uint32_t channels = 0, started = 0, stopped = 0;
  int64_t launched_ns = 0, started_ns = 0;
};

Kernel kernelOf(const Engine& en, const CommStreams& c, const Stream& s) {
  const EventRecord& e = *s.ops.back().e;
  Kernel k;
  for (const format::Link& l : en.set().ranks[s.rank].links) {
    if (!l.isKernel() || l.comm_id != c.comm_id || l.op_index != e.index) continue;
    k.known = true;
    k.channels = l.op_steps;
    k.started = l.opSteps(l.posted);
    k.stopped = l.opSteps(l.done);
    k.launched_ns = l.op_start_ns;
    k.started_ns = l.posted_ns;
  }
  return k;
}

// Stream `stream`'s rank, host and GPU (its communicator's record of the bus id).
Gpu gpuOf(const Engine& en, const CommStreams& c, size_t stream) {
  Gpu g{rankHostOf(en, c, stream), ""};
  for (const format::Comm& m : en.set().ranks[c.streams[stream].rank].comms) {
    if (m.comm_id == c.comm_id && !m.bus_id.empty()) g.bus_id = m.bus_id;
  }
  return g;
}

struct Finding {
  bool never_started = true;
  bool by_counts = false;  // idleWithLaunchesQueued: the record's totals, not its newest op
  std::vector<size_t> culprits, others;  // streams
  const EventRecord* op = nullptr;       // the op the culprits are held in
};

// A rank's kernel record, whichever op it holds last: the channels of every op it launched
// (planned), started (posted) and stopped (done), in total.
const format::Link* kernelRecord(const Engine& en, const CommStreams& c, const Stream& s) {
  for (const format::Link& l : en.set().ranks[s.rank].links) {
    if (l.isKernel() && l.comm_id == c.comm_id) return &l;
  }
  return nullptr;
}

// The oldest op of the stream not completed: with asynchronous launches, the one its GPU is at.
const EventRecord* oldestIncomplete(const Stream& s) {
  for (const Op& o : s.ops) {
    if (isIncomplete(*o.e)) return o.e;
  }
  return nullptr;
}

// The op launched on every rank; its channels run on some GPUs and never started on the others.
std::optional<Finding> neverStarted(const Engine& en, const CommStreams& c,
                                    const std::vector<Kernel>& ks) {
  Finding f;
  for (size_t i = 0; i < c.streams.size(); ++i) {
    const Kernel& k = ks[i];
    if (!k.known || k.channels == 0) return std::nullopt;
    if (c.streams[i].ops.back().e->op_seq != c.streams[0].ops.back().e->op_seq) return std::nullopt;
    if (k.started == 0 && en.now() - k.launched_ns >= kDeviceStallNs) {
      f.culprits.push_back(i);
    } else if (k.started > 0) {
      f.others.push_back(i);
    } else {
      return std::nullopt;  // launched under a second ago: not yet a finding
    }
  }
  if (f.culprits.empty() || f.others.empty()) return std::nullopt;
  f.op = c.streams[f.culprits.front()].ops.back().e;
  return f;
}

// The ranks still in op N started its kernel and it never stopped, while the others finished N
// (they wait in N + 1); every connection into the former delivered what its sender sent, as the
// transport counters say (without them the data may be what is missing: no finding).
std::optional<Finding> neverFinished(const Engine& en, const CommStreams& c,
                                     const std::vector<Kernel>& ks, const EventRecord& op) {
  Finding f;
  f.never_started = false;
  f.op = &op;
  for (size_t i = 0; i < c.streams.size(); ++i) {
    const Kernel& k = ks[i];
    if (c.streams[i].ops.back().e->op_seq != op.op_seq) {
      f.others.push_back(i);
    } else if (k.known && k.started > 0 && k.stopped < k.channels &&
               en.now() - k.started_ns >= kDeviceStallNs) {
      f.culprits.push_back(i);
    } else {
      return std::nullopt;
    }
  }
  if (f.culprits.empty() || f.others.empty()) return std::nullopt;
  const std::vector<Connection> conns = connectionsOf(en, c);
  for (size_t culprit : f.culprits) {
    bool delivered = false;
    for (const Connection& k : conns) {
      if (k.to_end != culprit) continue;
      if (k.stalled || !k.has_send || !k.has_recv || k.received < k.sent) return std::nullopt;
      delivered = true;
    }
    if (!delivered) return std::nullopt;
  }
  return f;
}

// Asynchronous launches: a rank whose host went on launching ops behind the one its GPU is stuck
// at has a later op in its kernel record, so the op's own counts are gone. Its totals still say
// it: channels launched and never started, none running, nothing started or stopped for a second
// and no launch for a second, while the other ranks' GPUs have channels running (they wait for its
// data). The culprits are held in their oldest op not completed.
std::optional<Finding> idleWithLaunchesQueued(const Engine& en, const CommStreams& c) {
  Finding f;
  f.by_counts = true;
  for (size_t i = 0; i < c.streams.size(); ++i) {
    const format::Link* k = kernelRecord(en, c, c.streams[i]);
    if (k == nullptr) return std::nullopt;
    const bool queued = k->planned > k->posted;
    const bool running = k->posted > k->done;
    const int64_t last_change = std::max({k->op_start_ns, k->posted_ns, k->done_ns});
    if (queued && !running && en.now() - last_change >= kDeviceStallNs) {
      f.culprits.push_back(i);
    } else if (running) {
      f.others.push_back(i);
    } else {
      return std::nullopt;
    }
  }
  if (f.culprits.empty() || f.others.empty()) return std::nullopt;
  f.op = oldestIncomplete(c.streams[f.culprits.front()]);
  if (f.op == nullptr) return std::nullopt;
  return f;
}

// The table of idleWithLaunchesQueued: each rank's totals.
EvidenceTable queueTable(const Engine& en, const CommStreams& c, const Finding& f) {
  EvidenceTable t;
  t.title = "kernel channels on comm " + shortCommId(c.comm_id) + ", every launched op, per rank";
  t.columns = {"rank",    "oldest_pending", "newest",      "launched",
               "started", "stopped",        "last_started"};
  for (size_t i = 0; i < c.streams.size(); ++i) {
    const format::Link& k = *kernelRecord(en, c, c.streams[i]);
    const EventRecord* oldest = oldestIncomplete(c.streams[i]);
    t.rows.push_back({TableCell::of(en.ranksOf(c, {i}).front()),
                      oldest != nullptr ? TableCell::of("#" + std::to_string(oldest->op_seq))
                                        : TableCell::none(),
                      TableCell::of("#" + std::to_string(c.streams[i].ops.back().e->op_seq)),
                      TableCell::of(static_cast<int64_t>(k.planned)),
                      TableCell::of(static_cast<int64_t>(k.posted)),
                      TableCell::of(static_cast<int64_t>(k.done)),
                      TableCell::of(clockTime(k.posted > 0 ? k.posted_ns : 0))});
    t.marked.push_back(std::find(f.culprits.begin(), f.culprits.end(), i) != f.culprits.end());
  }
  return t;
}

EvidenceTable kernelTable(const Engine& en, const CommStreams& c, const std::vector<Kernel>& ks,
                          const Finding& f, const std::string& name) {
  EvidenceTable t;
  t.title = "kernel channels on comm " + shortCommId(c.comm_id) + " around " + name + " per rank";
  t.columns = {"rank", "waits_in", "channels", "started", "stopped", "launched", "last_started"};
  for (size_t i = 0; i < c.streams.size(); ++i) {
    const Kernel& k = ks[i];
    const EventRecord& e = *c.streams[i].ops.back().e;
    auto count = [&](uint32_t n) {
      return k.known ? TableCell::of(int64_t{n}) : TableCell::none();
    };
    t.rows.push_back({TableCell::of(en.ranksOf(c, {i}).front()),
                      TableCell::of("#" + std::to_string(e.op_seq)), count(k.channels),
                      count(k.started), count(k.stopped),
                      TableCell::of(clockTime(k.known ? k.launched_ns : 0)),
                      TableCell::of(clockTime(k.known && k.started > 0 ? k.started_ns : 0))});
    t.marked.push_back(std::find(f.culprits.begin(), f.culprits.end(), i) != f.culprits.end());
  }
  return t;
}

}  // namespace

std::optional<Verdict> findDeviceStalled(const Engine& en) {
  const CommStreams* c = en.firstPending();
  if (c == nullptr || c->streams.size() < 2) return std::nullopt;
  const EventRecord* op = opEveryRunningRankIsIn(en, *c);
  if (op == nullptr) return std::nullopt;
  std::vector<Kernel> ks;
  for (const Stream& s : c->streams) ks.push_back(kernelOf(en, *c, s));
  std::optional<Finding> f = neverStarted(en, *c, ks);
  if (!f) f = neverFinished(en, *c, ks, *op);
  if (!f) f = idleWithLaunchesQueued(en, *c);
  if (!f) return std::nullopt;
  const size_t first = f->culprits.front();
  const Stream& held = c->streams[first];
  Verdict v;
  v.cls = VerdictClass::kDeviceStalled;
  v.ranks = en.ranksOf(*c, f->culprits);
  v.waiting = en.ranksOf(*c, f->others);
  v.comm_id = c->comm_id;
  v.seq = f->op->op_seq;
  v.op = f->op->op;
  v.site = en.siteAt(en.set().ranks[held.rank], *f->op);
  const Kernel& k = ks[first];
  DeviceStall stall;
  for (size_t culprit : f->culprits) stall.gpus.push_back(gpuOf(en, *c, culprit));
  if (f->by_counts) {
    stall.how = DeviceStall::How::kQueuedBehind;
    stall.ago_ns = en.now() - f->op->enqueueNs();
    stall.queued = static_cast<int64_t>(kernelRecord(en, *c, held)->planned -
                                        kernelRecord(en, *c, held)->posted);
  } else if (f->never_started) {
    stall.how = DeviceStall::How::kNeverStarted;
    stall.ago_ns = en.now() - k.launched_ns;
  } else {
    stall.how = DeviceStall::How::kNeverFinished;
    stall.started_ns = k.started_ns;
  }
  v.headline = deviceStalledHeadline(v, stall);
  en.addEvidence(*c, held.ops.size() - 1, v);
  if (f->by_counts) {
    v.tables.push_back(queueTable(en, *c, *f));
    return v;
  }
  const std::string name = std::string(format::opName(v.op)) + " #" + std::to_string(v.seq);
  v.tables.push_back(kernelTable(en, *c, ks, *f, name));
  return v;
}

}  // namespace ncclrec::analyzer::engine
