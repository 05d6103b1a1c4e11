#include "analyzer/diagnose.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "analyzer/blame.h"
#include "analyzer/engine.h"
#include "analyzer/events.h"
#include "analyzer/rules.h"
#include "analyzer/whereabouts.h"
#include "base/proc_state.h"

namespace ncclrec::analyzer::engine {

Engine::Engine(const format::LoadedSet& set, const DiagnoseOptions& options,
               const CallSites& callsites)
    : set_(set), options_(options), callsites_(callsites) {
  for (const RankData& r : set_.ranks) {
    now_ = std::max(now_, snapshotTime(r));
    if (r.exited) latest_exit_ns_ = std::max(latest_exit_ns_, r.exit_ns);
  }
  buildStreams();
  orderComms();
}

uint32_t Engine::siteOf(size_t rank, const EventRecord& e) {
  auto& cache = site_cache_[rank];
  const uint32_t cache_key = e.stackId() ^ (static_cast<uint32_t>(e.op) << 24);
  if (last_site_.rank == rank && last_site_.key == cache_key) return last_site_.site;
  if (const auto it = cache.find(cache_key); it != cache.end()) {
    last_site_ = {rank, cache_key, it->second};
    return it->second;
  }
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
      if (!format::isCollective(e.op) || e.commId() == 0 || e.state == EventState::kEmpty ||
          rejected(e)) {
        continue;
      }
      // Consecutive ops mostly share a communicator and a shape: skip the hash lookups then.
      if (e.commId() != last_comm) {
        auto [cit, new_comm] = comm_index.emplace(e.commId(), comms_.size());
        if (new_comm) comms_.push_back(CommStreams{e.commId(), {}});
        CommStreams& c = comms_[cit->second];
        auto [sit, new_stream] = stream_of.emplace(cit->second, c.streams.size());
        if (new_stream) c.streams.push_back(Stream{r, {}});
        last_comm = e.commId();
        last_stream = {cit->second, sit->second};
      }
      const uint32_t site = siteOf(r, e);
      const ShapeKey shape{e.op, site, e.count, e.dtype, e.redop, hasRoot(e.op) ? e.peer() : -1};
      if (!last_key || !(shape == last_shape)) {
        const auto [kit, new_key] = keys_.emplace(shape, static_cast<uint32_t>(keys_.size()));
        if (new_key) site_of_key_.push_back(site);
        last_key = kit->second;
        last_shape = shape;
      }
      comms_[last_stream.first].streams[last_stream.second].ops.push_back(Op{&e, *last_key});
    }
  }
  // Events come in issue order; seq is what NCCL pairs by, so order by it (stable for equal seq).
  for (CommStreams& c : comms_) {
    size_t start_seq = 0;
    for (Stream& s : c.streams) {
      const auto bySeq = [](const Op& a, const Op& b) { return a.e->op_seq < b.e->op_seq; };
      // Mostly in order already: a check costs one pass, the sort several.
      if (!std::is_sorted(s.ops.begin(), s.ops.end(), bySeq))
        std::stable_sort(s.ops.begin(), s.ops.end(), bySeq);
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

namespace {

// The earliest enqueue time and the lowest seq of the ops of `c` still pending; INT64_MAX and
// UINT64_MAX when none is.
std::pair<int64_t, uint64_t> scanPending(const CommStreams& c) {
  int64_t t = INT64_MAX;
  uint64_t seq = UINT64_MAX;
  for (const Stream& s : c.streams) {
    for (const Op& o : s.ops) {
      if (!isIncomplete(*o.e)) continue;
      t = std::min(t, o.e->enqueueNs());
      seq = std::min(seq, o.e->op_seq);
    }
  }
  return {t, seq};
}

}  // namespace

void Engine::orderComms() {
  std::vector<uint64_t> first_pending(comms_.size());  // by comm index
  for (size_t i = 0; i < comms_.size(); ++i) {
    std::tie(comms_[i].pending_since, first_pending[i]) = scanPending(comms_[i]);
  }
  for (const CommStreams& c : comms_) order_.push_back(&c);
  // A rank blocked in comm B while comm A's pending op waits for it: A is where the chain of waits
  // starts, so B comes after A, whichever of the two ops was enqueued first (the truncation on A
  // follows the chain to the rank at its end, or names the blocked rank and both ops).
  std::map<size_t, std::vector<const CommStreams*>> pending_in;  // rank -> comms it waits in
  for (const CommStreams& c : comms_) {
    for (const Stream& s : c.streams) {
      if (!s.ops.empty() && isIncomplete(*s.ops.back().e)) pending_in[s.rank].push_back(&c);
    }
  }
  std::set<const CommStreams*> waited_on;
  for (size_t ai = 0; ai < comms_.size(); ++ai) {
    const CommStreams& a = comms_[ai];
    if (first_pending[ai] == UINT64_MAX) continue;
    for (const Stream& s : a.streams) {
      if (!s.ops.empty() && s.ops.back().e->op_seq >= first_pending[ai]) continue;  // issued it
      const auto it = pending_in.find(s.rank);
      if (it == pending_in.end()) continue;
      for (const CommStreams* b : it->second) {
        if (b != &a) waited_on.insert(b);
      }
    }
  }
  std::stable_sort(order_.begin(), order_.end(), [&](const CommStreams* a, const CommStreams* b) {
    return std::make_pair(waited_on.contains(a), pendingSince(*a)) <
           std::make_pair(waited_on.contains(b), pendingSince(*b));
  });
}

const CommStreams* Engine::firstPending() const {
  for (const CommStreams* c : order_) {
    if (pendingSince(*c) != INT64_MAX) return c;
  }
  return nullptr;
}

int64_t Engine::lastSignOfLife(size_t rank) const {
  const RankData& r = set_.ranks[rank];
  int64_t t = r.heartbeat_ns;
  if (r.source == format::SourceKind::kDump) t = std::max(t, r.dump_ns);
  return t;
}

bool Engine::dead(size_t rank) const {
  const RankData& r = set_.ranks[rank];
  if (r.exited || r.fatal_signal != 0) return true;
  // The launcher saw its process still there when it reported, whatever its heartbeat says.
  if (r.process_state != 0 && r.process_state != 'Z' && r.process_state != 'X') return false;
  if (staleHeartbeat(rank)) return true;
  if (r.source == format::SourceKind::kDump || r.heartbeat_ns <= 0) return false;
  // A live process keeps beating while the others exit; this one stopped before they did.
  return latest_exit_ns_ - r.heartbeat_ns > kExitMarginNs;
}

const WaitGraph& Engine::waits() const {
  if (!waits_) {
    std::vector<Liveness> liveness(set_.ranks.size(), Liveness::kRunning);
    for (size_t i = 0; i < liveness.size(); ++i) {
      const RankData& r = set_.ranks[i];
      liveness[i] = r.exited              ? Liveness::kExited
                    : r.fatal_signal != 0 ? Liveness::kCrashed
                    : dead(i)             ? Liveness::kSilent
                    : notRunning(i)       ? Liveness::kNotRunning
                                          : Liveness::kRunning;
    }
    waits_.emplace(set_, std::move(liveness));
  }
  return *waits_;
}

bool Engine::staleHeartbeat(size_t rank) const {
  const RankData& r = set_.ranks[rank];
  // A dump is a snapshot written by the live process; only a black box goes on beating.
  if (r.source == format::SourceKind::kDump || r.heartbeat_ns <= 0) return false;
  return now_ - r.heartbeat_ns > options_.stale_heartbeat_ns;
}

NotRunning Engine::whyNotRunning(size_t rank) const {
  const RankData& r = set_.ranks[rank];
  NotRunning n;
  if (r.process_state != 0) {
    n.process_state = r.process_state;
    n.wchan = r.process_wchan;
    return n;
  }
  // No launcher: what the rank's dump saw of the thread that issues its NCCL calls.
  constexpr int64_t kSameDumpNs = 5'000'000'000;  // a snapshot of that dump, not an older one
  const bool fresh = r.dump_ns > 0 && r.threads_ns > 0 && r.threads_ns > r.dump_ns - kSameDumpNs;
  const format::ThreadState* t = fresh ? ncclThreadOf(r) : nullptr;
  if (t == nullptr || t->kernel_state != 'D') return n;
  n.thread = t->tid;
  n.wchan = t->wchan;
  return n;
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

void Engine::groupsAt(const CommStreams& c, size_t p, std::vector<Group>& groups,
                      std::vector<size_t>& ended, std::vector<size_t>& going) const {
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
}

// Slot by slot: the first slot whose ops differ in key (classifyKeyDivergence) or where a stream
// ended while others wait (stoppedAt). An insertion of an op that differs only in call site
// completes: it is kept as the candidate that explains a later slot.
bool Engine::diagnoseComm(const CommStreams& c, Verdict& v, Inferred& inferred) const {
  size_t longest = 0;
  for (const Stream& s : c.streams) longest = std::max(longest, s.ops.size());
  size_t shortest = longest;
  for (const Stream& s : c.streams) shortest = std::min(shortest, s.ops.size());
  // Slots below `uniform` hold one key on every stream: nothing happens there. Found stream by
  // stream (each one's ops are contiguous), not slot by slot across 32,768 streams.
  size_t uniform = shortest;
  for (const Stream& s : c.streams) {
    size_t p = 0;
    while (p < uniform && s.ops[p].key == c.streams.front().ops[p].key) ++p;
    uniform = p;
  }
  std::optional<Verdict> candidate;
  for (size_t p = uniform; p < longest; ++p) {
    // Later slots mostly hold one key too: skip them without building the groups.
    if (p < shortest && std::all_of(c.streams.begin(), c.streams.end(), [&](const Stream& s) {
          return s.ops[p].key == c.streams.front().ops[p].key;
        })) {
      continue;
    }
    std::vector<Group> groups;
    std::vector<size_t> ended;
    std::vector<size_t> going;
    groupsAt(c, p, groups, ended, going);
    if (groups.size() == 1 && ended.empty()) continue;
    const bool dead_stop = std::any_of(ended.begin(), ended.end(),
                                       [&](size_t s) { return dead(c.streams[s].rank, inferred); });
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
        addEvidence(c, p, found, inferred);
        // Ops that differ only in call site pair cleanly and complete: an insertion of such an op
        // surfaces later, as a stream that ends early, or never (an if/else issuing the same op).
        const bool completed = std::all_of(going.begin(), going.end(), [&](size_t s) {
          return !isIncomplete(*c.streams[s].ops[p].e);
        });
        const bool same_shape = std::all_of(groups.begin(), groups.end(), [&](const Group& g) {
          const EventRecord& a = *c.streams[g.streams[0]].ops[p].e;
          const EventRecord& b = *c.streams[groups[0].streams[0]].ops[p].e;
          return a.op == b.op && a.count == b.count && a.dtype == b.dtype && a.redop == b.redop &&
                 a.peer() == b.peer();
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
    return stoppedAt(c, p, ended, going, candidate, v, inferred);
  }
  return false;
}

std::optional<Verdict> Engine::divergenceOn(const CommStreams& c, Inferred& inferred) const {
  Inferred tried = inferred;
  Verdict d;
  if (!diagnoseComm(c, d, tried) || !isDivergence(d.cls)) return std::nullopt;
  inferred = std::move(tried);
  return d;
}

bool Engine::stoppedAt(const CommStreams& c, size_t p, const std::vector<size_t>& ended,
                       const std::vector<size_t>& going, std::optional<Verdict>& candidate,
                       Verdict& v, Inferred& inferred) const {
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
      return r.fatal_signal != 0 || (!r.exited && dead(c.streams[s].rank, inferred));
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
  if (own.empty() && anyLeftOnItsOwn(inferred)) return false;
  classifyTruncation(c, p, own.empty() ? ended : own, going, v, inferred);
  if (v.site.known()) v.stacks = {v.site};
  addEvidence(c, p, v, inferred);
  return true;
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
  Verdict v = engine::runRules(engine);
  addWaiting(set, sites, v);
  addWhereabouts(set, sites, v);  // whereabouts.h: where stopped ranks are now
  return v;
}

}  // namespace ncclrec::analyzer
