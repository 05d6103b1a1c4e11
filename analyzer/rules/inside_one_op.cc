#include "analyzer/rules/inside_one_op.h"

#include <algorithm>

#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer::engine {

const EventRecord* opEveryRunningRankIsIn(const Engine& en, const CommStreams& c) {
  const Op* first = nullptr;
  uint64_t lo = UINT64_MAX, hi = 0;
  const EventRecord* earliest = nullptr;
  for (const Stream& s : c.streams) {
    if (s.ops.empty() || !isIncomplete(*s.ops.back().e)) return nullptr;
    if (en.dead(s.rank) || en.notRunning(s.rank) || en.staleHeartbeat(s.rank)) return nullptr;
    const Op& last = s.ops.back();
    if (first != nullptr && last.key != first->key) return nullptr;
    if (first == nullptr) first = &last;
    if (last.e->op_seq < lo) earliest = last.e;
    lo = std::min<uint64_t>(lo, last.e->op_seq);
    hi = std::max<uint64_t>(hi, last.e->op_seq);
  }
  return first != nullptr && hi - lo <= 1 ? earliest : nullptr;
}

std::vector<Connection> connectionsOf(const Engine& en, const CommStreams& c) {
  std::vector<LinkEnd> ends;
  for (const Stream& s : c.streams) {
    const format::EventRecord& e = *s.ops.back().e;
    ends.push_back({e.rank(), &en.set().ranks[s.rank].links, e.index});
  }
  return analyzer::connectionsOf(c.comm_id, ends, en.now());
}

RankHost rankHostOf(const Engine& en, const CommStreams& c, size_t stream) {
  return {en.ranksOf(c, {stream}).front(), en.set().ranks[c.streams[stream].rank].host};
}

}  // namespace ncclrec::analyzer::engine
