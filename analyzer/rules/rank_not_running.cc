#include "analyzer/rules/rank_not_running.h"

#include <string>
#include <utility>
#include <vector>

#include "analyzer/headlines_liveness.h"
#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer::engine {
namespace {

// Why rank `rank` of the set does not run; nothing said() when nothing says it does not. Without
// the launcher's facts, a silent black box among fresh recordings: frozen or killed, which the
// recordings alone cannot tell apart (a killed rank's peers usually fail their call instead).
NotRunning whyStopped(const Engine& en, size_t rank) {
  const format::RankData& rd = en.set().ranks[rank];
  NotRunning why = en.whyNotRunning(rank);
  if (rd.process_state != 0 && !why.said()) return why;  // the launcher saw it run
  if (rd.exited || rd.fatal_signal != 0 || rd.source != format::SourceKind::kBlackBox) return why;
  if (en.staleHeartbeat(rank)) why.silent_ns = en.now() - rd.heartbeat_ns;
  return why;
}

// The op every stream of `c` waits in as its newest, the same call on every rank; nullptr when the
// streams disagree on it or one of them has completed it.
const EventRecord* opEveryRankEntered(const CommStreams& c) {
  const Op* first = nullptr;
  for (const Stream& s : c.streams) {
    if (s.ops.empty() || !isIncomplete(*s.ops.back().e)) return nullptr;
    const Op& last = s.ops.back();
    if (first == nullptr) {
      first = &last;
    } else if (last.key != first->key || last.e->op_seq != first->e->op_seq ||
               s.ops.size() != c.streams.front().ops.size()) {
      return nullptr;
    }
  }
  return first != nullptr ? first->e : nullptr;
}

}  // namespace

std::optional<Verdict> findRankNotRunning(const Engine& en) {
  const CommStreams* c = en.firstPending();
  if (c == nullptr || c->streams.size() < 2) return std::nullopt;
  const EventRecord* op = opEveryRankEntered(*c);
  if (op == nullptr) return std::nullopt;
  std::vector<size_t> stopped, waiting;
  NotRunning why;
  for (size_t i = 0; i < c->streams.size(); ++i) {
    NotRunning w = whyStopped(en, c->streams[i].rank);
    if (!w.said()) {
      waiting.push_back(i);
    } else {
      stopped.push_back(i);
      if (!why.said()) why = std::move(w);  // the first culprit stands for the others
    }
  }
  // Everyone silent is a host or a job that froze, or recordings read long after: no culprit.
  if (stopped.empty() || waiting.empty()) return std::nullopt;
  Verdict v;
  v.cls = VerdictClass::kRankNotRunning;
  v.ranks = en.ranksOf(*c, stopped);
  v.waiting = en.ranksOf(*c, waiting);
  v.comm_id = c->comm_id;
  v.seq = op->op_seq;
  v.op = op->op;
  const Stream& culprit = c->streams[stopped.front()];
  v.site = en.siteAt(en.set().ranks[culprit.rank], *culprit.ops.back().e);
  v.headline = stoppedInsideHeadline(v, why);
  en.addEvidence(*c, culprit.ops.size() - 1, v);
  return v;
}

}  // namespace ncclrec::analyzer::engine
