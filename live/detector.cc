#include "live/detector.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "analyzer/site_rule.h"
#include "analyzer/verdict.h"
#include "base/text.h"
#include "live/analysis.h"
#include "live/need.h"

namespace ncclrec::live {

void detail::notArrived(const Snapshot& s, size_t m, Need* n) {
  if (dead(s.ranks[m])) {
    n->cannot = true;
    n->blame.push_back(m);
    if (n->reason.empty())
      n->reason = rankName(s, m) + " " + std::string(livenessName(s.ranks[m].liveness));
    return;
  }
  n->deps.push_back(m);
}

namespace {

using detail::dead;
using detail::Need;
using detail::notArrived;
using detail::rankName;

// "trainStep() main.cc:18": frame `f`, named by the black box (Python) or a dump's symbols; ""
// when unnamed.
std::string frameText(const Snapshot& s, format::Frame f) {
  if (f.function.empty()) {
    const auto named = s.symbols->find(symbolKey(f.module, f.module_offset));
    if (named == s.symbols->end()) return "";
    f = named->second;
  }
  std::string text = f.function;
  if (f.function.find('(') == std::string::npos) text += "()";
  if (!f.file.empty()) {
    text += " " + f.file.substr(f.file.rfind('/') + 1);
    if (f.line > 0) text += ":" + std::to_string(f.line);
  }
  return text;
}

// " from trainStep() main.cc:18": the frame the call-site rule picks (the user's Python frame over
// library layers); "" when unnamed.
std::string siteOf(const Snapshot& s, const RankEntry& r, const OpView& op) {
  const auto it = r.history->stacks->find(op.stack_id);
  if (it == r.history->stacks->end() || it->second.frames.empty()) return "";
  const std::vector<format::Frame>& frames = it->second.frames;
  const std::string text = frameText(s, frames[size_t(s.site_rule->siteFrame(frames))]);
  return text.empty() ? "" : " from " + text;
}

// "; it is now in load_shard() data.py:81": the user frame of the rank's main thread in a thread
// snapshot taken since `since_ns` (the tools ask for one before the warning); "" without one.
std::string whereNow(const Snapshot& s, const RankEntry& r, int64_t since_ns) {
  if (r.threads == nullptr || r.threads->taken_ns < since_ns || r.threads->threads.empty())
    return "";
  const std::vector<format::Frame>& frames = r.threads->threads.front().frames;
  const int i = analyzer::userFrameIndex(frames, *s.site_rule);
  if (i < 0) return "";
  const std::string text = frameText(s, frames[size_t(i)]);
  return text.empty() ? "" : "; it is now in " + text;
}

bool isSplit(format::OpType op) {
  return op == format::OpType::kCommSplit || op == format::OpType::kCommShrink;
}

std::string opText(const OpView& op) {
  // A creation has no sequence number.
  return std::string(format::opName(op.op)) +
         (op.op_seq != 0 ? " #" + std::to_string(op.op_seq) : std::string()) + " on comm " +
         base::shortHex(op.comm_id);
}

// The earliest first NCCL call of the job's recorded ranks (their recorders start at it).
int64_t firstCallNs(const Snapshot& s) {
  int64_t first = 0;
  for (const RankEntry& r : s.ranks) {
    if (r.start_ns > 0 && (first == 0 || r.start_ns < first)) first = r.start_ns;
  }
  return first;
}

// The line of a wait this view cannot judge: members of a creation that made no NCCL call yet,
// a creation every member joined that does not finish, or ranks or pairings it does not show.
std::string unknownWhy(const Snapshot& s, const std::vector<int>& waiting, size_t u,
                       const OpView& op, const Need& need) {
  const std::string head = analyzer::ranksWord(waiting) +
                           (waiting.size() == 1 ? " waits" : " wait") + " (" + rankName(s, u) +
                           " in " + opText(op) + siteOf(s, s.ranks[u], op) + ")";
  if (!need.unrecorded.empty()) {
    const double since = ageSeconds(s.now_ns, firstCallNs(s));
    char secs[32];
    std::snprintf(secs, sizeof(secs), "%.1f s", since);
    return head + " for " + analyzer::ranksWord(need.unrecorded) + ", which " +
           (need.unrecorded.size() == 1 ? "has" : "have") + " made no NCCL call " + secs +
           " after the others' first (no black box): not started, or still starting";
  }
  if (need.all_joined) {
    return head +
           ": every member joined and the creation does not finish (its bootstrap may "
           "not connect)";
  }
  const bool paired = format::isCollective(op.op) || format::isP2p(op.op) || isSplit(op.op);
  return head + (paired ? " for ranks this view does not show" : ", an op not paired here");
}

// "ncclAllReduce 4096 float32", "ncclBroadcast 16 float32 root 1".
std::string shape(const OpView& op) {
  std::string s = std::string(format::opName(op.op)) + " " + std::to_string(op.count) + " " +
                  std::string(format::dataTypeName(op.dtype));
  if (op.peer >= 0) s += " root " + std::to_string(op.peer);
  return s;
}

const OpView* findOp(const RankEntry& r, uint64_t comm, uint64_t seq, bool p2p, int peer,
                     format::OpType op) {
  for (const OpView& o : r.history->ops) {
    if (o.comm_id != comm || o.op_seq != seq) continue;
    if (!p2p && format::isCollective(o.op)) return &o;
    if (p2p && o.op == op && o.peer == peer) return &o;
  }
  return nullptr;
}

// The newest per-peer number of `op` towards `peer` on `comm` the rank issued, 0 when none seen.
uint64_t newestP2p(const RankEntry& r, uint64_t comm, format::OpType op, int peer) {
  uint64_t seq = 0;
  for (const OpView& o : r.history->ops) {
    if (o.comm_id == comm && o.op == op && o.peer == peer) seq = std::max(seq, o.op_seq);
  }
  return seq;
}

Need collectiveNeed(const Snapshot& s, size_t r, const OpView& op, const CommGroup& g) {
  Need n;
  if (static_cast<int>(g.members.size()) < g.nranks) n.unknown = true;
  for (const CommMember& m : g.members) {
    if (m.rank == r) continue;
    if (m.ended) {
      n.cannot = true;
      n.blame.push_back(m.rank);
      if (n.reason.empty()) n.reason = rankName(s, m.rank) + " closed the communicator";
      continue;
    }
    if (m.issued < op.op_seq) {
      notArrived(s, m.rank, &n);
      continue;
    }
    const OpView* theirs = findOp(s.ranks[m.rank], op.comm_id, op.op_seq, false, -1, op.op);
    if (theirs != nullptr && (theirs->op != op.op || theirs->count != op.count ||
                              theirs->dtype != op.dtype || theirs->peer != op.peer)) {
      n.cannot = true;
      n.blame.push_back(m.rank);
      if (n.reason.empty()) {
        n.reason = rankName(s, r) + " and " + rankName(s, m.rank) + " issued different ops as #" +
                   std::to_string(op.op_seq) + " (" + shape(op) + " vs " + shape(*theirs) + ")";
      }
    }
  }
  return n;
}

Need p2pNeed(const Snapshot& s, size_t r, const OpView& op, const CommGroup& g) {
  Need n;
  const CommMember* self = nullptr;
  const CommMember* peer = nullptr;
  for (const CommMember& m : g.members) {
    if (m.rank == r) self = &m;
    if (m.comm_rank == op.peer) peer = &m;
  }
  if (self == nullptr || peer == nullptr) {
    n.unknown = true;
    return n;
  }
  const format::OpType other =
      op.op == format::OpType::kSend ? format::OpType::kRecv : format::OpType::kSend;
  if (newestP2p(s.ranks[peer->rank], op.comm_id, other, self->comm_rank) >= op.op_seq) return n;
  if (peer->ended) {
    n.cannot = true;
    n.blame.push_back(peer->rank);
    n.reason = rankName(s, peer->rank) + " closed the communicator";
    return n;
  }
  notArrived(s, peer->rank, &n);
  return n;
}

// Splits and shrinks of `comm` among the rank's recent ops; -1 when its history is longer than
// what the snapshot keeps (the count would be wrong).
int splitsOn(const RankEntry& r, uint64_t comm) {
  if (r.history->events_total > r.history->ops.size()) return -1;
  int n = 0;
  for (const OpView& o : r.history->ops) n += o.comm_id == comm && isSplit(o.op) ? 1 : 0;
  return n;
}

// A split is collective over its parent: every member calls it, in the same order. Their
// splits are counted (they carry no sequence number).
Need splitNeed(const Snapshot& s, size_t r, const OpView& op, const CommGroup& g) {
  Need n;
  const int mine = splitsOn(s.ranks[r], op.comm_id);
  if (mine < 0 || static_cast<int>(g.members.size()) < g.nranks) n.unknown = true;
  if (mine < 0) return n;
  for (const CommMember& m : g.members) {
    if (m.rank == r) continue;
    const int theirs = splitsOn(s.ranks[m.rank], op.comm_id);
    if (theirs < 0) {
      n.unknown = true;
    } else if (theirs < mine) {
      notArrived(s, m.rank, &n);
    }
  }
  return n;
}

Need needOf(const Snapshot& s, size_t r, const std::map<uint64_t, const CommGroup*>& comms) {
  const OpView& op = s.ranks[r].history->ops[size_t(s.status[r].oldest_incomplete)];
  auto it = comms.find(op.comm_id);
  if (format::joinsById(op.op))
    return detail::creationNeed(s, r, op, it == comms.end() ? nullptr : it->second);
  Need n;
  const bool paired = format::isCollective(op.op) || format::isP2p(op.op) || isSplit(op.op);
  if (it == comms.end() || !paired) {
    n.unknown = true;  // init, group end, a comm of no record: not paired here
    return n;
  }
  if (isSplit(op.op)) return splitNeed(s, r, op, *it->second);
  return format::isCollective(op.op) ? collectiveNeed(s, r, op, *it->second)
                                     : p2pNeed(s, r, op, *it->second);
}

// The longest gap, over every rank's recent ops, between leaving one NCCL call and entering the
// next: how long this job spends in host code between calls.
double longestHostGap(const Snapshot& s) {
  int64_t longest = 0;
  for (const RankEntry& r : s.ranks) {
    const std::vector<OpView>& ops = r.history->ops;
    for (size_t i = 1; i < ops.size(); ++i) {
      const OpView& a = ops[i - 1];
      const OpView& b = ops[i];
      const int64_t left = a.end_ns > 0 && a.end_ns <= b.enqueue_ns ? a.end_ns : a.enqueue_ns;
      longest = std::max(longest, b.enqueue_ns - left);
    }
  }
  return static_cast<double>(longest) / 1e9;
}

// True when the rank completed a collective or a send/receive: its job is past start-up.
bool completedAny(const RankEntry& r) {
  return std::any_of(r.history->ops.begin(), r.history->ops.end(), [](const OpView& o) {
    return o.end_ns > 0 && !o.incomplete() && (format::isCollective(o.op) || format::isP2p(o.op));
  });
}

// The longest gap between two completions on one of `comms`, over every rank's recent ops.
double longestCompletionGap(const Snapshot& s, const std::set<uint64_t>& comms) {
  int64_t longest = 0;
  for (const RankEntry& r : s.ranks) {
    int64_t prev = 0;
    for (const OpView& o : r.history->ops) {
      if (!comms.contains(o.comm_id) || o.end_ns <= 0) continue;
      if (prev > 0) longest = std::max(longest, o.end_ns - prev);
      prev = std::max(prev, o.end_ns);
    }
  }
  return static_cast<double>(longest) / 1e9;
}

// "rank 1 waits", "ranks 1-3 wait".
std::string waitWord(const std::vector<int>& ranks) {
  return analyzer::ranksWord(ranks) + (ranks.size() == 1 ? " waits" : " wait");
}

// Bytes a link moves per second at the least, for the time an op of a known size may take.
constexpr double kSlowLinkBytesPerS = 1e9;

// The longest any blocked rank's pending op may take by its size alone: count x element size x
// ranks of its communicator (an all-gather's or all-to-all's whole result) over a slow link.
double transferSeconds(const Snapshot& s, const std::set<size_t>& blocked) {
  double longest = 0;
  for (size_t r : blocked) {
    const OpView& op = s.ranks[r].history->ops[size_t(s.status[r].oldest_incomplete)];
    int nranks = 1;
    for (const CommView& c : s.ranks[r].history->comms) {
      if (c.comm_id == op.comm_id) nranks = std::max(1, c.nranks);
    }
    const double bytes =
        static_cast<double>(op.count) * std::max(1, format::dataTypeSize(op.dtype)) * nranks;
    longest = std::max(longest, bytes / kSlowLinkBytesPerS);
  }
  return longest;
}

double clampTo(double v, double lo, double hi) { return std::min(std::max(v, lo), hi); }

std::vector<int> globalRanks(const Snapshot& s, const std::set<size_t>& idx) {
  std::vector<int> out;
  for (size_t i : idx) out.push_back(s.ranks[i].global_rank);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

std::string_view stallKindName(StallKind kind) {
  switch (kind) {
    case StallKind::kNone:
      return "none";
    case StallKind::kCertain:
      return "certain";
    case StallKind::kSlow:
      return "slow";
    case StallKind::kWaitHost:
      return "host";
    case StallKind::kWaitUnknown:
      return "unknown";
  }
  return "?";
}

Assessment assess(const Snapshot& s, const DetectorParams& p) {
  Assessment a;
  std::map<uint64_t, const CommGroup*> comms;
  for (const CommGroup& g : s.comms) comms[g.comm_id] = &g;
  const size_t n = s.ranks.size();
  std::vector<bool> blocked(n, false), can(n, false);
  std::vector<Need> needs(n);
  std::set<size_t> waiting;
  for (size_t r = 0; r < n; ++r) {
    if (dead(s.ranks[r])) continue;
    if (s.status[r].oldest_incomplete < 0) {
      can[r] = true;  // in host code: it may yet issue what the others wait for
      continue;
    }
    blocked[r] = true;
    waiting.insert(r);
    needs[r] = needOf(s, r, comms);
  }
  if (waiting.empty()) return a;
  a.since_ns = s.summary.last_progress_ns;
  a.stalled_s = ageSeconds(s.now_ns, a.since_ns);
  a.waiting = globalRanks(s, waiting);
  // Which blocked ranks can still complete: their op is possible and every side not issued yet
  // belongs to a rank that can itself move (least fixed point: a cycle of waits stays stuck).
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r : waiting) {
      if (can[r] || needs[r].cannot) continue;
      const bool all =
          std::all_of(needs[r].deps.begin(), needs[r].deps.end(), [&](size_t d) { return can[d]; });
      if (all) can[r] = changed = true;
    }
  }
  const bool any_can =
      std::any_of(waiting.begin(), waiting.end(), [&](size_t r) { return can[r]; });
  const size_t first = *waiting.begin();
  const OpView& first_op = s.ranks[first].history->ops[size_t(s.status[first].oldest_incomplete)];
  if (!any_can) {
    a.kind = StallKind::kCertain;
    std::set<size_t> blame;
    std::string reason;
    for (size_t r : waiting) {
      for (size_t b : needs[r].blame) blame.insert(b);
      if (reason.empty()) reason = needs[r].reason;
    }
    for (size_t r : waiting) {
      for (size_t d : needs[r].deps) blame.insert(d);
    }
    a.awaited = globalRanks(s, blame);
    a.hang_after_s = std::min(p.confirm_s, p.timeout_s);
    a.why =
        "no pending op can complete: " + waitWord(a.waiting) + " (" + rankName(s, first) + " in " +
        opText(first_op) + ")" +
        (reason.empty() ? std::string(", each for a rank blocked elsewhere") : ", and " + reason);
    return a;
  }
  // Someone can move: who the blocked ranks wait for decides the patience.
  std::set<size_t> host, unknown_waiters;
  std::set<uint64_t> pending_comms;
  for (size_t r : waiting) {
    pending_comms.insert(s.ranks[r].history->ops[size_t(s.status[r].oldest_incomplete)].comm_id);
    if (needs[r].unknown) unknown_waiters.insert(r);
    for (size_t d : needs[r].deps) {
      if (!blocked[d]) host.insert(d);
    }
  }
  if (!host.empty()) {
    a.kind = StallKind::kWaitHost;
    a.awaited = globalRanks(s, host);
  } else if (!unknown_waiters.empty()) {
    a.kind = StallKind::kWaitUnknown;
  } else {
    a.kind = StallKind::kSlow;
  }
  if (a.kind == StallKind::kSlow) {
    // The job's cadence, and never less than the pending ops' own size allows: a first 10 GB
    // all-gather is not a hang at 2 s.
    const double gap =
        std::max(longestCompletionGap(s, pending_comms), transferSeconds(s, waiting));
    a.hang_after_s = p.timeout_set ? p.timeout_s : clampTo(p.factor * gap, p.floor_s, p.timeout_s);
    a.why = waitWord(a.waiting) + " in " + opText(first_op) +
            ", issued by every rank, and nothing completes";
    return a;
  }
  // Patience learnt from the job's host gaps, once it is under way: before the awaited ranks
  // completed any op (start-up: loading data or a model on one rank), and for waits this view
  // cannot judge, the upper bound.
  const double gap = longestHostGap(s);
  const bool under_way =
      a.kind == StallKind::kWaitHost &&
      std::all_of(host.begin(), host.end(), [&](size_t h) { return completedAny(s.ranks[h]); });
  // Every blocked rank in a creation all its members joined: only its bootstrap is left.
  const bool creations_joined =
      a.kind == StallKind::kWaitUnknown &&
      std::all_of(waiting.begin(), waiting.end(), [&](size_t r) { return needs[r].all_joined; });
  a.hang_after_s = p.timeout_set      ? p.timeout_s
                   : creations_joined ? std::min(p.init_stall_s, p.timeout_s)
                   : !under_way       ? p.timeout_s
                                      : clampTo(3 * gap, p.host_stall_s, p.timeout_s);
  a.warn_after_s = std::min(clampTo(2 * gap, p.host_warn_s, p.timeout_s), a.hang_after_s / 2);
  if (a.kind == StallKind::kWaitHost) {
    const size_t h = *host.begin();
    const std::vector<OpView>& ops = s.ranks[h].history->ops;
    a.why = waitWord(a.waiting) + " in " + opText(first_op) + siteOf(s, s.ranks[first], first_op) +
            " for " + analyzer::ranksWord(a.awaited) + ", in host code" +
            (ops.empty() ? std::string(" (no NCCL call yet)")
                         : " since its " + std::string(format::opName(ops.back().op)) + " #" +
                               std::to_string(ops.back().op_seq) +
                               siteOf(s, s.ranks[h], ops.back()) + " returned") +
            whereNow(s, s.ranks[h], a.since_ns);
  } else {
    const size_t u = *unknown_waiters.begin();
    const OpView& op = s.ranks[u].history->ops[size_t(s.status[u].oldest_incomplete)];
    a.why = unknownWhy(s, a.waiting, u, op, needs[u]);
  }
  return a;
}

}  // namespace ncclrec::live
