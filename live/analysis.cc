#include "live/analysis.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "format/bbox_layout.h"

namespace ncclrec::live {

std::string_view livenessName(Liveness liveness) {
  switch (liveness) {
    case Liveness::kAlive:
      return "alive";
    case Liveness::kExited:
      return "exited";
    case Liveness::kCrashed:
      return "crashed";
    case Liveness::kGone:
      return "killed";
    case Liveness::kStopped:
      return "stopped";
    case Liveness::kStale:
      return "stale";
    case Liveness::kNotRunning:
      return "not running";
  }
  return "?";
}

std::string rankKey(const RankEntry& rank) { return rank.host + "/" + std::to_string(rank.pid); }

std::string symbolKey(const std::string& module_path, uint64_t module_offset) {
  const size_t slash = module_path.rfind('/');
  std::string key = slash == std::string::npos ? module_path : module_path.substr(slash + 1);
  key += '+';
  key += std::to_string(module_offset);
  return key;
}

double ageSeconds(int64_t now_ns, int64_t ns) {
  if (ns <= 0 || ns >= now_ns) return 0;
  return static_cast<double>(now_ns - ns) / 1e9;
}

namespace {

constexpr uint32_t kCommEnded =
    format::kCommDestroyed | format::kCommFinalized | format::kCommAborted;

void rankStatus(const RankEntry& rank, RankStatus* status) {
  const std::vector<OpView>& ops = rank.history->ops;
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpView& op = ops[i];
    if (op.incomplete() && status->oldest_incomplete < 0) status->oldest_incomplete = int(i);
    status->last_call_ns = std::max(status->last_call_ns, op.enqueue_ns);
    status->last_progress_ns = std::max({status->last_progress_ns, op.enqueue_ns, op.end_ns});
  }
}

// The rank's oldest incomplete collective on `comm_id`, nullptr when none.
const OpView* pendingOn(const RankEntry& rank, uint64_t comm_id) {
  for (const OpView& op : rank.history->ops) {
    if (op.comm_id == comm_id && op.incomplete() && format::isCollective(op.op)) return &op;
  }
  return nullptr;
}

// The group's connections (analyzer/connections.h) when a member waits in a collective and
// members recorded transport counters: each member an end waiting in its oldest pending
// collective there, ahead when that is after the stuck one (as the analyzer's).
void connectionsOf(const Snapshot& s, CommGroup* g) {
  std::vector<const OpView*> ops;
  bool any_links = false;
  for (const CommMember& m : g->members) {
    const RankEntry& rank = s.ranks[m.rank];
    const OpView* op = pendingOn(rank, g->comm_id);
    if (op != nullptr && (g->stuck_seq == 0 || op->op_seq < g->stuck_seq))
      g->stuck_seq = op->op_seq;
    any_links |= rank.links != nullptr;
    ops.push_back(op);
  }
  if (g->stuck_seq == 0 || !any_links) return;
  std::vector<analyzer::LinkEnd> ends;
  for (size_t i = 0; i < g->members.size(); ++i) {
    const OpView* op = ops[i];
    ends.push_back({g->members[i].comm_rank, s.ranks[g->members[i].rank].links.get(),
                    op != nullptr ? op->index : format::kNoLinkOp,
                    op != nullptr && op->op_seq > g->stuck_seq});
  }
  for (const analyzer::Connection& k : analyzer::connectionsOf(g->comm_id, ends, s.now_ns)) {
    ConnectionView c;
    c.k = k;
    if (k.from_end != SIZE_MAX) c.from_rank = s.ranks[g->members[k.from_end].rank].global_rank;
    if (k.to_end != SIZE_MAX) c.to_rank = s.ranks[g->members[k.to_end].rank].global_rank;
    g->connections.push_back(c);
  }
  std::stable_sort(
      g->connections.begin(), g->connections.end(),
      [](const ConnectionView& a, const ConnectionView& b) { return a.k.stalled && !b.k.stalled; });
}

std::vector<CommGroup> groupComms(const Snapshot& s) {
  std::map<uint64_t, CommGroup> by_id;
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const RankEntry& rank = s.ranks[r];
    for (const CommView& c : rank.history->comms) {
      if (c.state & format::kCommInitFailed) continue;  // never existed: nothing to line up
      CommGroup& g = by_id[c.comm_id];
      g.comm_id = c.comm_id;
      g.nranks = std::max(g.nranks, c.nranks);
      if (g.name.empty()) g.name = c.name;
      CommMember m;
      m.rank = r;
      m.comm_rank = c.rank;
      m.nranks = c.nranks;
      m.issued = c.coll_seq;
      const OpView* pending = pendingOn(rank, c.comm_id);
      m.pending = pending != nullptr ? pending->op_seq : 0;
      m.ended = (c.state & kCommEnded) != 0;
      m.creating = format::commInCreation(c.state);
      g.creating += m.creating ? 1 : 0;
      g.members.push_back(m);
    }
  }
  std::vector<CommGroup> groups;
  for (auto& [id, g] : by_id) {
    g.max_issued = 0;
    g.min_issued = g.members.empty() ? 0 : g.members.front().issued;
    for (const CommMember& m : g.members) {
      g.max_issued = std::max(g.max_issued, m.issued);
      g.min_issued = std::min(g.min_issued, m.issued);
    }
    std::sort(g.members.begin(), g.members.end(), [&](const CommMember& a, const CommMember& b) {
      const RankEntry& ra = s.ranks[a.rank];
      const RankEntry& rb = s.ranks[b.rank];
      return std::make_tuple(a.issued, a.pending == 0 ? 1 : 0, ra.global_rank, a.comm_rank) <
             std::make_tuple(b.issued, b.pending == 0 ? 1 : 0, rb.global_rank, b.comm_rank);
    });
    connectionsOf(s, &g);
    groups.push_back(std::move(g));
  }
  std::sort(groups.begin(), groups.end(), [](const CommGroup& a, const CommGroup& b) {
    return std::make_tuple(-static_cast<int64_t>(a.members.size()), a.comm_id) <
           std::make_tuple(-static_cast<int64_t>(b.members.size()), b.comm_id);
  });
  return groups;
}

void lagOf(Snapshot* s) {
  for (const CommGroup& g : s->comms) {
    for (const CommMember& m : g.members) {
      if (m.ended) continue;  // a rank that closed the comm is not behind on it
      RankStatus& st = s->status[m.rank];
      const uint64_t lag = g.max_issued - m.issued;
      st.lag += lag;
      if (lag > 0 && lag > st.lag_max - st.lag_issued) {
        st.lag_comm = g.comm_id;
        st.lag_issued = m.issued;
        st.lag_max = g.max_issued;
      }
    }
  }
}

int slowestRank(const Snapshot& s) {
  int best = -1;
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    const RankStatus& st = s.status[i];
    if (best < 0) {
      best = int(i);
      continue;
    }
    const RankStatus& b = s.status[size_t(best)];
    if (st.lag != b.lag) {
      if (st.lag > b.lag) best = int(i);
      continue;
    }
    // Equal lag: behind ranks, the one silent longest; otherwise the one that arrived last.
    const bool better =
        st.lag > 0 ? st.last_call_ns < b.last_call_ns : st.last_call_ns > b.last_call_ns;
    if (better) best = int(i);
  }
  return best;
}

}  // namespace

void analyze(Snapshot* s) {
  // Each distinct stack is learnt once however many ranks hold it.
  auto rule = std::make_shared<analyzer::SiteRule>(s->library_frames);
  for (const RankEntry& rank : s->ranks) {
    for (const auto& [id, stack] : *rank.history->stacks)
      rule->learn(stack.frames, s->symbols.get());
  }
  s->site_rule = std::move(rule);
  s->status.assign(s->ranks.size(), RankStatus{});
  s->summary = JobSummary{};
  JobSummary& sum = s->summary;
  for (size_t i = 0; i < s->ranks.size(); ++i) {
    const RankEntry& rank = s->ranks[i];
    rankStatus(rank, &s->status[i]);
    sum.last_progress_ns = std::max(sum.last_progress_ns, s->status[i].last_progress_ns);
    switch (rank.liveness) {
      case Liveness::kAlive:
        ++sum.alive;
        break;
      case Liveness::kExited:
        ++sum.exited;
        break;
      case Liveness::kCrashed:
        ++sum.crashed;
        break;
      case Liveness::kGone:
        ++sum.killed;
        break;
      case Liveness::kStopped:
        ++sum.stopped;
        break;
      case Liveness::kStale:
        ++sum.stale;
        break;
      case Liveness::kNotRunning:
        ++sum.not_running;
        break;
    }
  }
  s->comms = groupComms(*s);
  lagOf(s);
  sum.slowest = slowestRank(*s);

  bool waited_too_long = false;
  for (size_t i = 0; i < s->ranks.size(); ++i) {
    const int oi = s->status[i].oldest_incomplete;
    if (oi < 0 || s->ranks[i].liveness != Liveness::kAlive) continue;
    const OpView& op = s->ranks[i].history->ops[size_t(oi)];
    waited_too_long |= ageSeconds(s->now_ns, op.enqueue_ns) > s->hang_after_s;
  }
  sum.hang = waited_too_long && ageSeconds(s->now_ns, sum.last_progress_ns) > s->hang_after_s;
  if (!sum.hang) return;
  for (size_t i = 0; i < s->ranks.size(); ++i) {
    if (s->status[i].lag > 0) sum.behind.push_back(i);
  }
  std::stable_sort(sum.behind.begin(), sum.behind.end(),
                   [&](size_t a, size_t b) { return s->status[a].lag > s->status[b].lag; });
  if (sum.behind.empty()) {
    for (size_t i = 0; i < s->ranks.size(); ++i) {
      if (s->ranks[i].liveness != Liveness::kAlive) sum.behind.push_back(i);
    }
  }
  if (sum.behind.empty()) {
    for (size_t i = 0; i < s->ranks.size(); ++i) {
      if (s->status[i].oldest_incomplete >= 0) sum.behind.push_back(i);
    }
  }
}

}  // namespace ncclrec::live

namespace ncclrec::live {

int focusOp(const RankEntry& rank, const RankStatus& status) {
  if (status.oldest_incomplete >= 0) return status.oldest_incomplete;
  return rank.history->ops.empty() ? -1 : static_cast<int>(rank.history->ops.size()) - 1;
}

const format::Stack* stackOf(const RankEntry& rank, const OpView& op) {
  if (op.stack_id == kNoStackId) return nullptr;
  auto it = rank.history->stacks->find(op.stack_id);
  return it == rank.history->stacks->end() ? nullptr : &it->second;
}

int focusStackRows(const RankEntry& rank, const RankStatus& status) {
  const int focus = focusOp(rank, status);
  if (focus < 0) return 0;
  const format::Stack* stack = stackOf(rank, rank.history->ops[size_t(focus)]);
  return stack == nullptr || stack->frames.empty() ? 1 : static_cast<int>(stack->frames.size());
}

std::shared_ptr<const ThreadsView> makeThreadsView(int pid, int64_t taken_ns,
                                                   format::DumpReason reason,
                                                   std::vector<format::ThreadState> threads) {
  auto view = std::make_shared<ThreadsView>();
  view->taken_ns = taken_ns;
  view->reason = reason;
  view->total = threads.size();
  for (format::ThreadState& t : threads) {
    view->answered += t.status == format::kThreadAnswered || t.status == format::kThreadDumper;
    if (t.name.rfind("ncclrec-", 0) == 0) continue;
    ++view->listed;
    const bool main_thread = t.tid == pid;
    if (view->threads.size() >= kThreadsKept && !main_thread) continue;
    if (t.frames.size() > kThreadFramesKept) t.frames.resize(kThreadFramesKept);
    if (main_thread) {
      view->threads.insert(view->threads.begin(), std::move(t));
      if (view->threads.size() > kThreadsKept) view->threads.pop_back();
    } else {
      view->threads.push_back(std::move(t));
    }
  }
  return view;
}

}  // namespace ncclrec::live
