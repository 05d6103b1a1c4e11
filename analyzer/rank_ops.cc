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

const format::EventRecord* newestPendingCreation(const format::RankData& r) {
  return newest(r, [](const format::EventRecord& e) {
    return format::isCommCreation(e.op) && isIncomplete(e);
  });
}

const format::EventRecord* newestPeerCall(const format::RankData& r) {
  return newest(r, talksToPeers);
}

}  // namespace ncclrec::analyzer
