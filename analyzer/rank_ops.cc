#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer {
namespace {

template <typename Pred>
const format::EventRecord* newest(const format::RankData& r, Pred pred) {
  for (auto it = r.events.rbegin(); it != r.events.rend(); ++it) {
    if (pred(*it)) return &*it;
  }
  return nullptr;
}

}  // namespace

const format::EventRecord* newestCommOp(const format::RankData& r) { return newest(r, isCommOp); }

const format::EventRecord* newestPendingCommOp(const format::RankData& r) {
  return newest(r, [](const format::EventRecord& e) { return isCommOp(e) && isIncomplete(e); });
}

std::vector<const format::EventRecord*> pendingGroupOps(const format::RankData& r) {
  const format::EventRecord* last = newestPendingCommOp(r);
  if (last == nullptr) return {};
  if ((last->flags & format::kEventInGroup) == 0) return {last};
  std::vector<const format::EventRecord*> out;
  for (size_t i = static_cast<size_t>(last - r.events.data()) + 1; i-- > 0;) {
    const format::EventRecord& e = r.events[i];
    if (e.tid() != last->tid()) continue;
    if (e.op == format::OpType::kGroupStart && e.group_depth == 0) break;
    if (isCommOp(e) && isIncomplete(e) && (e.flags & format::kEventInGroup) != 0) out.push_back(&e);
  }
  return {out.rbegin(), out.rend()};
}

const format::EventRecord* newestPendingCreation(const format::RankData& r) {
  return newest(r, [](const format::EventRecord& e) {
    return format::isCommCreation(e.op) && isIncomplete(e);
  });
}

const format::EventRecord* newestPeerCall(const format::RankData& r) {
  return newest(r, talksToPeers);
}

}  // namespace ncclrec::analyzer
