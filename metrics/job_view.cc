#include "metrics/job_view.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "analyzer/health.h"
#include "live/analysis.h"

namespace ncclrec::metrics {
namespace {

using live::Liveness;
using live::RankEntry;
using live::Snapshot;

RankState stateOf(const Snapshot& s, size_t r, HangState hang, bool blocked_now) {
  const RankEntry& rank = s.ranks[r];
  switch (rank.liveness) {
    case Liveness::kExited:
    case Liveness::kStopped:  // stopped by its launcher after it dumped
      return RankState::kExited;
    case Liveness::kCrashed:
    case Liveness::kGone:  // killed from outside: SIGKILL, the OOM killer
      return RankState::kCrashed;
    case Liveness::kStale:
    case Liveness::kNotRunning:  // stopped, or in uninterruptible sleep
      return RankState::kUnresponsive;
    case Liveness::kAlive:
      break;
  }
  if (rank.heartbeat_ns > 0 && live::ageSeconds(s.now_ns, rank.heartbeat_ns) > kUnresponsiveAfterS)
    return RankState::kUnresponsive;
  if (hang == HangState::kNone) return RankState::kRunning;
  return blocked_now ? RankState::kBlocked : RankState::kInHost;
}

// P(X >= n) for X ~ Binomial(full, 1 / ranks): how likely one given rank is last in n or more of
// `full` collectives when each rank is as likely to be last (the analyzer's test, health.cc).
double chanceOfBeingLast(size_t n, size_t full, double ranks) {
  const double p = 1.0 / ranks;
  double tail = 0;
  for (size_t k = n; k <= full; ++k) {
    const auto kd = static_cast<double>(k);
    const auto fd = static_cast<double>(full);
    tail += std::exp(std::lgamma(fd + 1) - std::lgamma(kd + 1) - std::lgamma(fd - kd + 1) +
                     kd * std::log(p) + (fd - kd) * std::log1p(-p));
  }
  return tail;
}

}  // namespace

JobView viewJob(const Snapshot& s, const live::DetectorParams& params,
                const std::optional<Report>& report) {
  JobView v;
  int64_t started_ns = 0;  // the newest process's start: a report older than it is a past one's
  for (const RankEntry& r : s.ranks) {
    if (v.job_id.empty() && !r.run_id.empty()) v.job_id = r.run_id;
    started_ns = std::max(started_ns, r.start_ns);
  }
  if (report && (report->run_id == v.job_id || v.job_id.empty()) &&
      report->mtime_ns >= started_ns) {
    v.report = report;
    if (v.job_id.empty()) v.job_id = report->run_id;
  }
  if (!s.ranks.empty()) v.assessment = live::assess(s, params);
  const live::Assessment& a = v.assessment;
  if (a.kind != live::StallKind::kNone) {
    v.stall_s = a.stalled_s;
    v.hang_after_s = a.hang_after_s;
    if (a.stalled_s >= a.hang_after_s) {
      v.hang = HangState::kHang;
    } else if (a.stalled_s >= params.confirm_s) {
      v.hang = HangState::kStalled;
    }
  }
  if (v.report && v.report->reason == "hang") v.hang = HangState::kHang;

  const std::set<int> awaited(a.awaited.begin(), a.awaited.end());
  const std::set<int> culprits =
      v.report ? std::set<int>(v.report->culprits.begin(), v.report->culprits.end())
               : std::set<int>();
  const std::vector<double> slow = slowScores(s);
  v.ranks.resize(s.ranks.size());
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    RankFacts& f = v.ranks[r];
    const live::RankStatus& st = s.status[r];
    const bool pending = st.oldest_incomplete >= 0;
    if (pending && s.ranks[r].liveness == Liveness::kAlive) {
      f.oldest_pending_s = live::ageSeconds(
          s.now_ns, s.ranks[r].history->ops[size_t(st.oldest_incomplete)].enqueue_ns);
    }
    f.state = stateOf(s, r, v.hang, pending);
    f.slow_score = slow[r];
    const int g = s.ranks[r].global_rank;
    f.awaited = v.hang != HangState::kNone && awaited.contains(g);
    f.culprit = culprits.contains(g);
    v.slow_score = std::max(v.slow_score, f.slow_score);
  }
  return v;
}

std::shared_ptr<const Snapshot> newestJob(std::shared_ptr<const Snapshot> snapshot) {
  const Snapshot& s = *snapshot;
  const RankEntry* newest = nullptr;
  for (const RankEntry& r : s.ranks) {
    if (newest == nullptr || r.start_ns > newest->start_ns) newest = &r;
  }
  if (newest == nullptr) return snapshot;
  // Of each (host, global rank) of the newest run, the process that started last.
  std::map<std::pair<std::string, int>, size_t> keep;
  std::vector<size_t> unknown;  // ranks not known yet (-1): all kept
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    const RankEntry& r = s.ranks[i];
    if (r.run_id != newest->run_id) continue;
    if (r.global_rank < 0) {
      unknown.push_back(i);
      continue;
    }
    auto [it, added] = keep.try_emplace({r.host, r.global_rank}, i);
    if (!added && r.start_ns > s.ranks[it->second].start_ns) it->second = i;
  }
  if (keep.size() + unknown.size() == s.ranks.size()) return snapshot;
  std::vector<size_t> order = unknown;
  for (const auto& [key, i] : keep) order.push_back(i);
  std::sort(order.begin(), order.end());
  auto copy = std::make_shared<Snapshot>();
  copy->now_ns = s.now_ns;
  copy->hang_after_s = s.hang_after_s;
  copy->source_label = s.source_label;
  copy->dir = s.dir;
  copy->notes = s.notes;
  copy->symbols = s.symbols;
  copy->library_frames = s.library_frames;
  for (size_t i : order) copy->ranks.push_back(s.ranks[i]);
  live::analyze(copy.get());
  return copy;
}

std::vector<double> slowScores(const Snapshot& s) {
  std::vector<double> score(s.ranks.size(), 0.0);
  for (const live::CommGroup& g : s.comms) {
    if (g.members.size() < 2 || static_cast<int>(g.members.size()) < g.nranks) continue;
    // seq -> enqueue time of each member (indexed like g.members), for completed collectives.
    std::map<uint64_t, std::vector<int64_t>> arrivals;
    for (size_t m = 0; m < g.members.size(); ++m) {
      for (const live::OpView& op : s.ranks[g.members[m].rank].history->ops) {
        if (op.comm_id != g.comm_id || !format::isCollective(op.op) || op.incomplete() ||
            op.enqueue_ns <= 0) {
          continue;
        }
        auto& row = arrivals[op.op_seq];
        row.resize(g.members.size(), 0);
        row[m] = op.enqueue_ns;
      }
    }
    std::vector<int64_t> waited_for(g.members.size(), 0);
    std::vector<size_t> last_count(g.members.size(), 0);
    int64_t total_wait = 0, first = 0, last = 0;
    size_t full = 0;
    for (const auto& [seq, row] : arrivals) {
      if (std::count(row.begin(), row.end(), 0) > 0) continue;  // not every member's window
      ++full;
      std::vector<int64_t> sorted = row;
      std::sort(sorted.begin(), sorted.end());
      const int64_t latest = sorted.back();
      const int64_t wait = latest - sorted[sorted.size() - 2];
      first = first == 0 ? sorted.front() : std::min(first, sorted.front());
      last = std::max(last, latest);
      total_wait += wait;
      if (wait == 0) continue;  // a tie: no one rank was last
      const size_t who = size_t(std::find(row.begin(), row.end(), latest) - row.begin());
      waited_for[who] += wait;
      ++last_count[who];
    }
    if (full < analyzer::kSlowMinOps || total_wait <= 0) continue;
    const double span = static_cast<double>(last - first);
    for (size_t m = 0; m < g.members.size(); ++m) {
      const double w = static_cast<double>(waited_for[m]);
      // As the analyzer's slow_rank: the waiting must matter (in all, and against the time the
      // collectives span), and being last that often must be unlikely by chance (a rank the
      // scheduler happens to run last a few times in a short window is no straggler).
      if (w < analyzer::kSlowMinWaitNs || w < analyzer::kSlowWaitOfSpan * span) continue;
      const auto members = static_cast<double>(g.members.size());
      if (members * chanceOfBeingLast(last_count[m], full, members) >= analyzer::kSlowChance)
        continue;
      const size_t r = g.members[m].rank;
      score[r] = std::max(score[r], w / static_cast<double>(total_wait));
    }
  }
  return score;
}

}  // namespace ncclrec::metrics
