// The last verdict rules (rules.h): no stream shows a divergence, and none stopped while others
// wait for it. A failed call, a communicator never created, a slow rank, no hang at all, or every
// rank waiting in one op.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/health.h"
#include "analyzer/rules.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> failedCall(Engine& en) {
  // A call that returned an error: the job may stop there without anything left pending.
  const format::LoadedSet& set = en.set();
  const EventRecord* failed = nullptr;
  size_t failed_rank = 0;
  for (size_t r = 0; r < set.ranks.size(); ++r) {
    for (const EventRecord& e : set.ranks[r].events) {
      if (e.state == EventState::kFailed && talksToPeers(e) &&
          (failed == nullptr || e.enqueueNs() < failed->enqueueNs())) {
        failed = &e;
        failed_rank = r;
      }
    }
  }
  if (failed == nullptr) return std::nullopt;
  Verdict v;
  if (en.leaverExplains(*failed, v)) return v;
  v.cls = VerdictClass::kNcclError;
  v.ranks = {en.globalRank(failed_rank)};
  v.comm_id = failed->commId();
  v.seq = failed->op_seq;
  v.op = failed->op;
  v.site = en.siteAt(set.ranks[failed_rank], *failed);
  v.headline = ranksWord(v.ranks) + ": " + std::string(format::opName(failed->op)) +
               (failed->op_seq != 0 ? " #" + std::to_string(failed->op_seq) : "") +
               (failed->commId() != 0 ? " on comm " + shortCommId(failed->commId()) : "") +
               " from " + describeCallSite(v.site) + " returned NCCL error " +
               std::to_string(failed->result);
  v.stacks = {v.site};
  return v;
}

std::optional<Verdict> stuckCreatingComm(Engine& en) {
  // Stuck creating a communicator: no collective of it started, so no stream shows the wait. A
  // rank that never joins (not started, or started with another RANK, WORLD_SIZE or unique id)
  // usually left nothing recorded for it.
  if (en.firstPending() != nullptr) return std::nullopt;
  const format::LoadedSet& set = en.set();
  const EventRecord* creating = nullptr;
  for (const RankData& r : set.ranks) {
    for (const EventRecord& e : r.events) {
      if (format::isCommLifecycle(e.op) && isIncomplete(e) &&
          (creating == nullptr || e.enqueueNs() < creating->enqueueNs())) {
        creating = &e;
      }
    }
  }
  if (creating == nullptr) return std::nullopt;
  std::vector<int> waiting;
  for (size_t r = 0; r < set.ranks.size(); ++r) {
    for (const EventRecord& e : set.ranks[r].events) {
      if (e.commId() == creating->commId() && e.op == creating->op && isIncomplete(e)) {
        waiting.push_back(en.globalRank(r));
        break;
      }
    }
  }
  std::sort(waiting.begin(), waiting.end());
  Verdict v;
  v.cls = VerdictClass::kUndecided;
  v.comm_id = creating->commId();
  v.op = creating->op;
  v.headline = ranksWord(waiting) + (waiting.size() == 1 ? " waits" : " wait") + " in " +
               std::string(format::opName(creating->op)) + " on comm " +
               shortCommId(creating->commId()) + " for a communicator of " +
               std::to_string(creating->nranks()) + " ranks";
  const std::vector<int> no_data = en.ranksWithNoData();
  if (!no_data.empty()) {
    v.headline += "; no data for " + ranksWord(no_data);
    v.missing.push_back("no data for " + ranksWord(no_data) +
                        ": a rank that was not started, or was started with another RANK, "
                        "WORLD_SIZE or unique id, never joins; its recording or the launcher's "
                        "log would show it");
  } else {
    v.missing.push_back(
        "the ranks that did not join were recorded elsewhere (see ranks:): "
        "their stacks show why they never reached " +
        std::string(format::opName(creating->op)));
  }
  return v;
}

std::optional<Verdict> slowRank(Engine& en) {
  if (en.firstPending() != nullptr) return std::nullopt;
  return findSlowRank(en.set(), en.callsites());
}

std::optional<Verdict> noHang(Engine& en) {
  if (en.firstPending() != nullptr) return std::nullopt;
  size_t collectives = 0;
  for (const CommStreams& c : en.comms()) {
    for (const Stream& s : c.streams) collectives += s.ops.size();
  }
  const size_t comms = en.comms().size();
  Verdict v;
  v.cls = VerdictClass::kNoHang;
  v.headline = "no hang: every recorded collective completed (" + std::to_string(collectives) +
               " ops on " + std::to_string(comms) + " communicator" + (comms == 1 ? "" : "s") +
               " across " + std::to_string(en.set().ranks.size()) + " ranks)";
  const std::vector<int> no_data = en.ranksWithNoData();
  if (!no_data.empty()) v.missing.push_back("no data for " + ranksWord(no_data));
  return v;
}

std::optional<Verdict> allWaitInOneOp(Engine& en) {
  const CommStreams* pending = en.firstPending();
  Verdict v;
  if (pending == nullptr) return v;  // unreachable after no_hang; undecided
  v.cls = VerdictClass::kUndecided;
  v.comm_id = pending->comm_id;
  // pendingSince() found an op, so some stream holds one.
  const Stream& s = *std::find_if(pending->streams.begin(), pending->streams.end(),
                                  [](const Stream& x) { return !x.ops.empty(); });
  const Op& last = s.ops.back();
  v.seq = last.e->op_seq;
  v.op = last.e->op;
  v.site = en.siteAt(en.set().ranks[s.rank], *last.e);
  std::vector<size_t> all(pending->streams.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  const std::vector<int> present = en.ranksOf(*pending, all);
  v.headline = ranksWord(present) + (present.size() == 1 ? " waits" : " wait") + " in " +
               std::string(format::opName(v.op)) + " #" + std::to_string(v.seq) + " on comm " +
               shortCommId(v.comm_id) + " and agree on every op before it";
  const std::vector<int> no_data = en.ranksWithNoData();
  if (!no_data.empty()) {
    v.missing.push_back("no data for " + ranksWord(no_data) +
                        ": their black boxes or dumps would show where they are");
    v.headline += "; no data for " + ranksWord(no_data);
  } else {
    v.missing.push_back(
        "every rank waits in the same op: the transport or the device is stuck, not the "
        "program's order; the NCCL log (NCCL_DEBUG=INFO) would tell more");
  }
  en.addEvidence(*pending, s.ops.size() - 1, v);
  return v;
}

}  // namespace ncclrec::analyzer::engine
