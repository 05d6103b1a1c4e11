#include "analyzer/diagnose.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "analyzer/blame.h"
#include "analyzer/devices.h"
#include "analyzer/engine.h"
#include "analyzer/events.h"
#include "analyzer/health.h"
#include "analyzer/lifecycle_rules.h"
#include "analyzer/waits.h"
#include "analyzer/whereabouts.h"

namespace ncclrec::analyzer::engine {

uint32_t Engine::siteOf(size_t rank, const EventRecord& e) {
  auto& cache = site_cache_[rank];
  const uint32_t cache_key = e.stack_id ^ (static_cast<uint32_t>(e.op) << 24);
  if (const auto it = cache.find(cache_key); it != cache.end()) return it->second;
  const std::string key = callSiteKey(callSiteOf(set_.ranks[rank], e, callsites_.rule()));
  const auto [it, inserted] =
      sites_.emplace(std::make_pair(e.op, key), static_cast<uint32_t>(sites_.size()));
  if (inserted) {
    const auto [loc, unused] = locs_.emplace(key, static_cast<uint32_t>(locs_.size()));
    loc_of_site_.push_back(loc->second);
  }
  cache.emplace(cache_key, it->second);
  return it->second;
}

void Engine::buildStreams() {
  site_cache_.resize(set_.ranks.size());
  std::unordered_map<uint64_t, size_t> comm_index;
  for (size_t r = 0; r < set_.ranks.size(); ++r) {
    std::unordered_map<uint64_t, size_t> stream_of;  // comm index -> stream of this rank
    uint64_t last_comm = 0;
    std::pair<size_t, size_t> last_stream;  // (comm index, stream index) of last_comm
    std::optional<uint32_t> last_key;
    ShapeKey last_shape{};
    for (const EventRecord& e : set_.ranks[r].events) {
      if (!format::isCollective(e.op) || e.comm_id == 0 || e.state == EventState::kEmpty ||
          rejected(e)) {
        continue;
      }
      // Consecutive ops mostly share a communicator and a shape: skip the hash lookups then.
      if (e.comm_id != last_comm) {
        auto [cit, new_comm] = comm_index.emplace(e.comm_id, comms_.size());
        if (new_comm) comms_.push_back(CommStreams{e.comm_id, {}});
        CommStreams& c = comms_[cit->second];
        auto [sit, new_stream] = stream_of.emplace(cit->second, c.streams.size());
        if (new_stream) c.streams.push_back(Stream{r, {}});
        last_comm = e.comm_id;
        last_stream = {cit->second, sit->second};
      }
      const uint32_t site = siteOf(r, e);
      const ShapeKey shape{e.op, site, e.count, e.dtype, e.redop, hasRoot(e.op) ? e.peer : -1};
      if (!last_key || !(shape == last_shape)) {
        last_key = keys_.emplace(shape, static_cast<uint32_t>(keys_.size())).first->second;
        last_shape = shape;
      }
      comms_[last_stream.first].streams[last_stream.second].ops.push_back(
          Op{&e, *last_key, site, loc_of_site_[site]});
    }
  }
  // Events come in issue order; seq is what NCCL pairs by, so order by it (stable for equal seq).
  for (CommStreams& c : comms_) {
    size_t start_seq = 0;
    for (Stream& s : c.streams) {
      std::stable_sort(s.ops.begin(), s.ops.end(),
                       [](const Op& a, const Op& b) { return a.e->op_seq < b.e->op_seq; });
      if (!s.ops.empty()) start_seq = std::max<size_t>(start_seq, s.ops.front().e->op_seq);
    }
    // A ring that wrapped lost the oldest ops: compare from the first seq every rank still holds.
    for (Stream& s : c.streams) {
      const auto first = std::find_if(s.ops.begin(), s.ops.end(),
                                      [&](const Op& o) { return o.e->op_seq >= start_seq; });
      s.ops.erase(s.ops.begin(), first);
    }
    std::sort(c.streams.begin(), c.streams.end(), [&](const Stream& a, const Stream& b) {
      return globalRank(a.rank) < globalRank(b.rank);
    });
  }
}

int64_t Engine::lastSignOfLife(size_t rank) const {
  const RankData& r = set_.ranks[rank];
  int64_t t = r.heartbeat_ns;
  if (r.source == format::SourceKind::kDump) t = std::max(t, r.dump_ns);
  return t;
}

bool Engine::dead(size_t rank) const {
  const RankData& r = set_.ranks[rank];
  if (r.exited || r.fatal_signal != 0 || inferred_dead_.contains(rank)) return true;
  // A dump is a snapshot written by the live process; only a black box goes on beating.
  if (r.source == format::SourceKind::kDump || r.heartbeat_ns <= 0) return false;
  if (now_ - r.heartbeat_ns > options_.stale_heartbeat_ns) return true;
  // A live process keeps beating while the others exit; this one stopped before they did.
  return latest_exit_ns_ - r.heartbeat_ns > kExitMarginNs;
}

std::vector<int> Engine::ranksOf(const CommStreams& c, const std::vector<size_t>& streams) const {
  std::vector<int> out;
  for (size_t s : streams) out.push_back(globalRank(c.streams[s].rank));
  std::sort(out.begin(), out.end());
  return out;
}

// Whether, at p, the streams of `ahead` hold the op the other streams held at p - 1: they are
// shifted by the one op they inserted earlier.
bool Engine::shiftedByOne(const CommStreams& c, size_t p, const std::vector<size_t>& going,
                          const std::vector<int>& ahead) const {
  if (p == 0) return false;
  const auto isAhead = [&](size_t s) {
    return std::binary_search(ahead.begin(), ahead.end(), globalRank(c.streams[s].rank));
  };
  const auto other =
      std::find_if(going.begin(), going.end(), [&](size_t s) { return !isAhead(s); });
  if (other == going.end()) return false;
  const uint32_t before = c.streams[*other].ops[p - 1].key;
  bool any = false;
  for (size_t s : going) {
    if (!isAhead(s)) continue;
    if (c.streams[s].ops[p].key != before) return false;
    any = true;
  }
  return any;
}

// The op that usually follows the last common op (the one before p) in this stream's history.
bool Engine::diagnoseComm(const CommStreams& c, Verdict& v) {
  size_t longest = 0;
  for (const Stream& s : c.streams) longest = std::max(longest, s.ops.size());
  std::optional<Verdict> candidate;
  for (size_t p = 0; p < longest; ++p) {
    std::vector<Group> groups;
    std::vector<size_t> ended;
    std::vector<size_t> going;
    for (size_t i = 0; i < c.streams.size(); ++i) {
      const Stream& s = c.streams[i];
      if (p >= s.ops.size()) {
        ended.push_back(i);
        continue;
      }
      going.push_back(i);
      const uint32_t key = s.ops[p].key;
      auto g =
          std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.key == key; });
      if (g == groups.end()) {
        groups.push_back(Group{key, {}, {}});
        g = groups.end() - 1;
      }
      g->streams.push_back(i);
      g->ranks.push_back(globalRank(s.rank));
    }
    if (groups.size() == 1 && ended.empty()) continue;
    const bool dead_stop =
        std::any_of(ended.begin(), ended.end(), [&](size_t s) { return dead(c.streams[s].rank); });
    if (groups.size() > 1 && candidate && shiftedByOne(c, p, going, candidate->ranks)) {
      // The earlier insertion explains this slot too: the inserting ranks are one op ahead, so
      // their op here is the one the others issued just before. When the shapes now differ,
      // every rank blocks here (hostnccl, or NCCL on mismatched sizes) before any stream ends.
      v = std::move(*candidate);
      return true;
    }
    if (groups.size() > 1 && !dead_stop && !candidate) {
      Verdict found;
      if (classifyKeyDivergence(c, p, groups, found)) {
        addEvidence(c, p, found);
        // Ops that differ only in call site pair cleanly and complete: an insertion of such an op
        // surfaces later, as a stream that ends early, or never (an if/else issuing the same op).
        const bool completed = std::all_of(going.begin(), going.end(), [&](size_t s) {
          return !isIncomplete(*c.streams[s].ops[p].e);
        });
        const bool same_shape = std::all_of(groups.begin(), groups.end(), [&](const Group& g) {
          const EventRecord& a = *c.streams[g.streams[0]].ops[p].e;
          const EventRecord& b = *c.streams[groups[0].streams[0]].ops[p].e;
          return a.op == b.op && a.count == b.count && a.dtype == b.dtype && a.redop == b.redop &&
                 a.peer == b.peer;
        });
        if (!(completed && same_shape)) {
          v = std::move(found);
          return true;
        }
        candidate = std::move(found);
      }
    }
    if (ended.empty()) continue;  // only call sites differed
    // A stream that ends while the others go on matters only if they wait for it.
    const bool waiting = std::any_of(going.begin(), going.end(), [&](size_t s) {
      for (size_t q = p; q < c.streams[s].ops.size(); ++q) {
        if (unfinished(*c.streams[s].ops[q].e)) return true;
      }
      return false;
    });
    if (!waiting) continue;
    if (candidate) {
      // The earlier insertion explains the stop when exactly the other ranks ran out of ops
      // (they finished their loop one op short of the inserting ranks), none of them crashed.
      std::vector<int> stopped = ranksOf(c, ended);
      const bool complement =
          stopped.size() + candidate->ranks.size() == c.streams.size() &&
          std::none_of(stopped.begin(), stopped.end(), [&](int r) {
            return std::binary_search(candidate->ranks.begin(), candidate->ranks.end(), r);
          });
      const bool crashed = std::any_of(ended.begin(), ended.end(), [&](size_t s) {
        const RankData& r = set_.ranks[c.streams[s].rank];
        return r.fatal_signal != 0 || (!r.exited && dead(c.streams[s].rank));
      });
      if (complement && !crashed) {
        v = std::move(*candidate);
        return true;
      }
    }
    // Cause before symptom: ranks that stopped after a peer's departure failed their call are
    // its victims. Name the ranks that stopped on their own; when every rank that stopped here
    // reacted, another communicator shows the one that left first.
    std::vector<size_t> own;
    for (size_t s : ended) {
      if (!reacted(c.streams[s].rank)) own.push_back(s);
    }
    if (own.empty() && anyLeftOnItsOwn()) return false;
    classifyTruncation(c, p, own.empty() ? ended : own, going, v);
    if (v.site.known()) v.stacks = {v.site};
    addEvidence(c, p, v);
    return true;
  }
  return false;
}

Verdict Engine::run() {
  Verdict v;
  for (const RankData& r : set_.ranks) {
    now_ = std::max(now_, snapshotTime(r));
    if (r.exited) latest_exit_ns_ = std::max(latest_exit_ns_, r.exit_ns);
  }
  // A refused init (ranks sharing a device) explains whatever follows it. Waits that pair by peer
  // or span communicators are decided before the per-slot alignment: a rank blocked in comm B
  // looks, from comm A, like a rank that stopped.
  // A communicator ended or split by some ranks only, or a peer left out of a grouped exchange:
  // a call around the slots (lifecycle_rules.h), which the ranks that wait would otherwise take
  // the blame for.
  for (auto* find : {&findDeviceCollision, &findEarlyCommEnd, &findPartialSplit, &findGroupPeerSkip,
                     &findWaitCycle, &findP2pMismatch}) {
    if (find == &findP2pMismatch && findP2pStop(v)) {
      addStatus(v);
      return v;
    }
    if (std::optional<Verdict> w = find(set_, callsites_)) {
      v = std::move(*w);
      if (find == &findWaitCycle) {
        buildStreams();
        preferEarlierCause(v);
      } else if (find == &findP2pMismatch) {
        buildStreams();
        collectiveCauseOfP2pWait(v);
      }
      addStatus(v);
      return v;
    }
  }
  buildStreams();
  // Communicators with ops still pending first: that is where the job hangs.
  std::vector<const CommStreams*> order;
  for (const CommStreams& c : comms_) order.push_back(&c);
  const auto pendingSince = [](const CommStreams& c) {
    int64_t t = INT64_MAX;
    for (const Stream& s : c.streams) {
      for (const Op& o : s.ops) {
        if (isIncomplete(*o.e)) t = std::min(t, o.e->enqueue_ns);
      }
    }
    return t;
  };
  // A rank blocked in comm B while comm A's pending op waits for it: A is where the chain of waits
  // starts (rank_blocked_elsewhere names the blocked rank and both ops), so B comes after A,
  // whichever of the two ops was enqueued first.
  std::map<size_t, std::vector<const CommStreams*>> pending_in;  // rank -> comms it waits in
  for (const CommStreams& c : comms_) {
    for (const Stream& s : c.streams) {
      if (!s.ops.empty() && isIncomplete(*s.ops.back().e)) pending_in[s.rank].push_back(&c);
    }
  }
  std::set<const CommStreams*> waited_on;
  for (const CommStreams& a : comms_) {
    uint64_t first_pending = UINT64_MAX;
    for (const Stream& s : a.streams) {
      for (const Op& o : s.ops) {
        if (isIncomplete(*o.e)) first_pending = std::min(first_pending, o.e->op_seq);
      }
    }
    if (first_pending == UINT64_MAX) continue;
    for (const Stream& s : a.streams) {
      if (!s.ops.empty() && s.ops.back().e->op_seq >= first_pending) continue;  // issued it
      const auto it = pending_in.find(s.rank);
      if (it == pending_in.end()) continue;
      for (const CommStreams* b : it->second) {
        if (b != &a) waited_on.insert(b);
      }
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](const CommStreams* a, const CommStreams* b) {
    return std::make_pair(waited_on.contains(a), pendingSince(*a)) <
           std::make_pair(waited_on.contains(b), pendingSince(*b));
  });
  // Cause before symptom: a communicator whose pending ops disagree (an insertion, a deletion, a
  // mismatch) explains the waits on the others, even when a rank blocked there is what another
  // communicator's older pending op waits for (a root mismatch in a sub-communicator, an extra op
  // on one communicator of a group that spans several).
  for (const CommStreams* c : order) {
    if (pendingSince(*c) == INT64_MAX) continue;
    const std::set<size_t> inferred = inferred_dead_;
    Verdict d;
    if (diagnoseComm(*c, d) && isDivergence(d.cls)) {
      v = std::move(d);
      addStatus(v);
      return v;
    }
    inferred_dead_ = inferred;
  }
  for (const CommStreams* c : order) {
    if (diagnoseComm(*c, v)) {
      preferEarlierCause(v);
      addStatus(v);
      return v;
    }
  }
  addStatus(v);
  // No divergence. Either nothing is pending, or every present rank waits in the same op.
  const CommStreams* pending = nullptr;
  for (const CommStreams* c : order) {
    if (pendingSince(*c) != INT64_MAX) {
      pending = c;
      break;
    }
  }
  size_t collectives = 0;
  for (const CommStreams& c : comms_) {
    for (const Stream& s : c.streams) collectives += s.ops.size();
  }
  std::vector<int> no_data;
  for (const RankStatus& st : v.status) {
    if (st.state == "no data") no_data.push_back(st.rank);
  }
  // A call that returned an error: the job may stop there without anything left pending.
  const EventRecord* failed = nullptr;
  size_t failed_rank = 0;
  for (size_t r = 0; r < set_.ranks.size(); ++r) {
    for (const EventRecord& e : set_.ranks[r].events) {
      const bool comm_op = format::isCollective(e.op) || format::isP2p(e.op) ||
                           format::isCommLifecycle(e.op) || e.op == OpType::kGroupEnd;
      if (e.state == EventState::kFailed && comm_op &&
          (failed == nullptr || e.enqueue_ns < failed->enqueue_ns)) {
        failed = &e;
        failed_rank = r;
      }
    }
  }
  if (failed != nullptr && leaverExplains(*failed, v)) return v;
  if (failed != nullptr) {
    v.cls = VerdictClass::kNcclError;
    v.ranks = {globalRank(failed_rank)};
    v.comm_id = failed->comm_id;
    v.seq = failed->op_seq;
    v.op = failed->op;
    v.site = siteAt(set_.ranks[failed_rank], *failed);
    v.headline = ranksWord(v.ranks) + ": " + std::string(format::opName(failed->op)) +
                 (failed->op_seq != 0 ? " #" + std::to_string(failed->op_seq) : "") +
                 (failed->comm_id != 0 ? " on comm " + hex8(failed->comm_id) : "") + " from " +
                 describeCallSite(v.site) + " returned NCCL error " +
                 std::to_string(failed->result);
    v.stacks = {v.site};
    return v;
  }
  // Stuck creating a communicator: no collective of it started, so no stream shows the wait. A
  // rank that never joins (not started, or started with another RANK, WORLD_SIZE or unique id)
  // usually left nothing recorded for it.
  const EventRecord* creating = nullptr;
  for (const RankData& r : set_.ranks) {
    for (const EventRecord& e : r.events) {
      if (format::isCommLifecycle(e.op) && isIncomplete(e) &&
          (creating == nullptr || e.enqueue_ns < creating->enqueue_ns)) {
        creating = &e;
      }
    }
  }
  if (pending == nullptr && creating != nullptr) {
    std::vector<int> waiting;
    for (size_t r = 0; r < set_.ranks.size(); ++r) {
      for (const EventRecord& e : set_.ranks[r].events) {
        if (e.comm_id == creating->comm_id && e.op == creating->op && isIncomplete(e)) {
          waiting.push_back(globalRank(r));
          break;
        }
      }
    }
    std::sort(waiting.begin(), waiting.end());
    v.cls = VerdictClass::kUndecided;
    v.comm_id = creating->comm_id;
    v.op = creating->op;
    v.headline = ranksWord(waiting) + (waiting.size() == 1 ? " waits" : " wait") + " in " +
                 std::string(format::opName(creating->op)) + " on comm " + hex8(creating->comm_id) +
                 " for a communicator of " + std::to_string(creating->nranks) + " ranks";
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
  if (pending == nullptr) {
    if (std::optional<Verdict> slow = findSlowRank(set_, callsites_)) {
      slow->status = std::move(v.status);
      return std::move(*slow);
    }
    v.cls = VerdictClass::kNoHang;
    v.headline = "no hang: every recorded collective completed (" + std::to_string(collectives) +
                 " ops on " + std::to_string(comms_.size()) + " communicator" +
                 (comms_.size() == 1 ? "" : "s") + " across " + std::to_string(set_.ranks.size()) +
                 " ranks)";
    if (!no_data.empty()) v.missing.push_back("no data for " + ranksWord(no_data));
    return v;
  }
  v.cls = VerdictClass::kUndecided;
  v.comm_id = pending->comm_id;
  // pendingSince() found an op, so some stream holds one.
  const Stream& s = *std::find_if(pending->streams.begin(), pending->streams.end(),
                                  [](const Stream& x) { return !x.ops.empty(); });
  const Op& last = s.ops.back();
  v.seq = last.e->op_seq;
  v.op = last.e->op;
  v.site = siteAt(set_.ranks[s.rank], *last.e);
  std::vector<size_t> all(pending->streams.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  const std::vector<int> present = ranksOf(*pending, all);
  v.headline = ranksWord(present) + (present.size() == 1 ? " waits" : " wait") + " in " +
               std::string(format::opName(v.op)) + " #" + std::to_string(v.seq) + " on comm " +
               hex8(v.comm_id) + " and agree on every op before it";
  if (!no_data.empty()) {
    v.missing.push_back("no data for " + ranksWord(no_data) +
                        ": their black boxes or dumps would show where they are");
    v.headline += "; no data for " + ranksWord(no_data);
  } else {
    v.missing.push_back(
        "every rank waits in the same op: the transport or the device is stuck, not the "
        "program's order; the NCCL log (NCCL_DEBUG=INFO) would tell more");
  }
  addEvidence(*pending, s.ops.size() - 1, v);
  return v;
}

}  // namespace ncclrec::analyzer::engine

namespace ncclrec::analyzer {

Verdict diagnose(const format::LoadedSet& set, const DiagnoseOptions& options) {
  const CallSites sites(set.ranks, options.library_frames);
  return diagnose(set, options, sites);
}

Verdict diagnose(const format::LoadedSet& set, const DiagnoseOptions& options,
                 const CallSites& sites) {
  engine::Engine engine(set, options, sites);
  Verdict v = engine.run();
  addWaiting(set, sites, v);
  addWhereabouts(set, sites, v);  // whereabouts.h: where stopped ranks are now
  return v;
}

}  // namespace ncclrec::analyzer
