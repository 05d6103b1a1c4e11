// The evidence table around the divergence and each rank's status.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "analyzer/engine.h"
#include "analyzer/events.h"

namespace ncclrec::analyzer::engine {

void Engine::addEvidence(const CommStreams& c, size_t p, Verdict& v,
                         const Inferred& inferred) const {
  const size_t from = p >= kContextBefore ? p - kContextBefore : 0;
  struct Row {
    std::vector<std::pair<uint32_t, EventState>> sig;  // what makes two ranks' rows identical
    EvidenceRow row;
  };
  std::vector<Row> rows;
  for (const Stream& s : c.streams) {
    Row r;
    for (size_t i = from; i < s.ops.size() && i <= p + kContextAfter; ++i) {
      r.sig.emplace_back(s.ops[i].key, s.ops[i].e->state);
      r.row.ops.push_back(evidenceOpOf(set_.ranks[s.rank], *s.ops[i].e, callsites_));
    }
    const RankData& rd = set_.ranks[s.rank];
    if (rd.exited) {
      r.row.note = "exited";
    } else if (rd.fatal_signal != 0) {
      r.row.note = "crashed (" + base::signalName(rd.fatal_signal) + ")";
    } else if (notRunning(s.rank)) {
      r.row.note = "not running";
    } else if (dead(s.rank, inferred)) {
      r.row.note = rd.dump_ns > 0 ? "stopped after its dump" : "killed";
    }
    const auto same = std::find_if(rows.begin(), rows.end(), [&](const Row& x) {
      return x.sig == r.sig && x.row.note == r.row.note;
    });
    if (same != rows.end()) {
      same->row.ranks.push_back(globalRank(s.rank));
    } else {
      r.row.ranks.push_back(globalRank(s.rank));
      rows.push_back(std::move(r));
    }
  }
  if (!c.streams.empty() && from < c.streams.front().ops.size() + kContextAfter) {
    for (const Stream& s : c.streams) {
      if (from < s.ops.size()) {
        v.first_seq = s.ops[from].e->op_seq;
        break;
      }
    }
  }
  for (Row& r : rows) {
    std::sort(r.row.ranks.begin(), r.row.ranks.end());
    v.evidence.push_back(std::move(r.row));
  }
}

std::vector<int> Engine::ranksWithNoData() const {
  int world = 0;
  std::set<int> present;
  for (const RankData& r : set_.ranks) {
    world = std::max(world, r.world_size);
    present.insert(r.global_rank);
  }
  std::vector<int> out;
  for (int g = 0; g < world; ++g) {
    if (!present.contains(g)) out.push_back(g);
  }
  return out;
}

void Engine::addStatus(Verdict& v, const Inferred& inferred) const {
  for (int g : ranksWithNoData()) {
    std::string why = "no black box or dump";
    for (const format::SilentNode& n : set_.silent_nodes) {
      if (std::find(n.ranks.begin(), n.ranks.end(), g) == n.ranks.end()) continue;
      char secs[32];
      snprintf(secs, sizeof(secs), "%.1f", n.silent_s);
      why += ": its node " + std::to_string(n.node) + " (host " + n.host +
             ") was not heard from for " + secs + " s";
      break;
    }
    v.status.push_back({g, RankState::kNoData, std::move(why)});
  }
  std::map<int, size_t> by_rank;
  for (size_t r = 0; r < set_.ranks.size(); ++r) by_rank.emplace(set_.ranks[r].global_rank, r);
  for (const auto& [g, r] : by_rank) {
    const RankData& rd = set_.ranks[r];
    RankStatus st{g, RankState::kInHostCode, ""};
    const EventRecord* pending = newestPendingCommOp(rd);
    const EventRecord* last_done = nullptr;
    for (const EventRecord& e : rd.events) {
      if (!isIncomplete(e)) last_done = &e;
    }
    const auto describe = [&](const EventRecord& e) {
      std::string s = std::string(format::opName(e.op));
      if (e.op_seq != 0) s += " #" + std::to_string(e.op_seq);
      if (e.commId() != 0) s += " on comm " + shortCommId(e.commId());
      return s + " from " + describeCallSite(siteAt(rd, e));
    };
    if (rd.exited) {
      st.state = RankState::kExited;
    } else if (rd.fatal_signal != 0) {
      st.state = RankState::kCrashed;
      st.detail = base::signalName(rd.fatal_signal);
    } else if (notRunning(r)) {
      // The launcher saw the process there, stopped or in uninterruptible sleep.
      st.state = RankState::kNotRunning;
      st.detail = notRunningPhrase(whyNotRunning(r));
      if (pending != nullptr) {
        st.detail += "; inside " + describe(*pending);
      } else if (last_done != nullptr) {
        st.detail += "; last op " + describe(*last_done);
      }
    } else if (dead(r, inferred)) {
      // No mark: a signal from outside ended it. After its dump, that is how cxxrun stops a
      // hung job's ranks; without one, SIGKILL, SIGTERM or the OOM killer.
      st.state = RankState::kDead;
      st.detail = rd.dump_ns > 0
                      ? "stopped after its " + std::string(format::dumpReasonName(rd.dump_reason)) +
                            " dump (no exit or crash mark)"
                      : "killed from outside (no exit or crash mark, no dump)";
      st.detail += inferred.dead.contains(r)
                       ? "; its peers lost the connection to it"
                       : "; last sign of life " + seconds(now_ - lastSignOfLife(r)) +
                             " before the newest recording";
    } else if (pending != nullptr) {
      st.state = RankState::kWaiting;
      st.detail = describe(*pending);
      if (pending->enqueueNs() > 0) st.detail += " for " + seconds(now_ - pending->enqueueNs());
    } else if (const EventRecord* creating = newestPendingCreation(rd)) {
      // In a communicator's creation: waiting for its other members.
      st.state = RankState::kWaiting;
      st.detail = describe(*creating);
      if (creating->enqueueNs() > 0) st.detail += " for " + seconds(now_ - creating->enqueueNs());
    }
    if (st.detail.empty() && last_done != nullptr) {
      st.detail = "last op " + describe(*last_done);
      if (last_done->endNs() > 0)
        st.detail += ", ended " + seconds(now_ - last_done->endNs()) + " ago";
    }
    v.status.push_back(std::move(st));
  }
  std::sort(v.status.begin(), v.status.end(),
            [](const RankStatus& a, const RankStatus& b) { return a.rank < b.rank; });
}

}  // namespace ncclrec::analyzer::engine
