#include "analyzer/rules/inside_one_op.h"

#include <algorithm>

#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer::engine {

const EventRecord* opEveryRunningRankIsIn(const Engine& en, const CommStreams& c) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const Stream& s : c.streams) {
    if (s.ops.empty() || !isIncomplete(*s.ops.back().e)) return nullptr;
    if (en.dead(s.rank) || en.notRunning(s.rank) || en.staleHeartbeat(s.rank)) return nullptr;
    lo = std::min<uint64_t>(lo, s.ops.back().e->op_seq);
    hi = std::max<uint64_t>(hi, s.ops.back().e->op_seq);
  }
  if (c.streams.empty() || hi - lo > 1) return nullptr;
  // Every stream's op at `lo` is the same call: the newest op of those still in it, the one
  // before the newest of those that finished it (whatever they issued next).
  const Op* first = nullptr;
  const EventRecord* earliest = nullptr;
  for (const Stream& s : c.streams) {
    const Op* at = &s.ops.back();
    if (at->e->op_seq != lo) {
      if (s.ops.size() < 2 || s.ops[s.ops.size() - 2].e->op_seq != lo) return nullptr;
      at = &s.ops[s.ops.size() - 2];
    } else if (earliest == nullptr) {
      earliest = at->e;
    }
    if (first != nullptr && at->key != first->key) return nullptr;
    if (first == nullptr) first = at;
  }
  return earliest;
}

std::vector<Connection> connectionsOf(const Engine& en, const CommStreams& c) {
  uint64_t lo = UINT64_MAX;
  for (const Stream& s : c.streams) {
    if (!s.ops.empty()) lo = std::min<uint64_t>(lo, s.ops.back().e->op_seq);
  }
  std::vector<LinkEnd> ends;
  for (const Stream& s : c.streams) {
    const format::EventRecord& e = *s.ops.back().e;
    ends.push_back({e.rank(), &en.set().ranks[s.rank].links, e.index, e.op_seq > lo});
  }
  return analyzer::connectionsOf(c.comm_id, ends, en.now());
}

RankHost rankHostOf(const Engine& en, const CommStreams& c, size_t stream) {
  return {en.ranksOf(c, {stream}).front(), en.set().ranks[c.streams[stream].rank].host};
}

}  // namespace ncclrec::analyzer::engine
