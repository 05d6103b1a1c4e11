#include "analyzer/whereabouts.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "analyzer/frames.h"
#include "analyzer/headlines_where.h"
#include "analyzer/phrases.h"
#include "format/bbox_layout.h"

namespace ncclrec::analyzer {
namespace {

std::string frameName(const format::Frame& f) {
  if (f.function.empty()) return moduleAndOffset(f);
  return f.python ? f.function : shortFunctionName(f.function);
}

std::string stateWord(char state) {
  switch (state) {
    case 'R':
      return "running";
    case 'S':
      return "sleeping";
    case 'D':
      return "in uninterruptible wait";
    case 'T':
    case 't':
      return "stopped";
    case 'Z':
      return "exiting";
    default:
      return "";
  }
}

RankThreads threadsOf(const format::RankData& rd, const CallSites& sites) {
  RankThreads rt;
  rt.rank = rd.global_rank;
  rt.snapshot_ns = rd.threads_ns;
  if (const format::ThreadState* t = ncclThreadOf(rd)) rt.nccl_tid = t->tid;
  if (!rd.events.empty()) {
    const format::EventRecord& last = rd.events.back();
    rt.since_last_call_ns = std::max<int64_t>(0, rd.threads_ns - last.enqueueNs());
  }
  // The NCCL thread first, then by tid.
  rt.threads = rd.threads;
  std::stable_sort(rt.threads.begin(), rt.threads.end(), [&](const auto& a, const auto& b) {
    if ((a.tid == rt.nccl_tid) != (b.tid == rt.nccl_tid)) return a.tid == rt.nccl_tid;
    return a.tid < b.tid;
  });
  for (const format::ThreadState& t : rt.threads) {
    ThreadPlace place = placeOf(t, sites);
    rt.places.push_back(std::move(place.site));
    rt.doing.push_back(std::move(place.doing));
  }
  return rt;
}

bool aboutStoppedRanks(VerdictClass c) {
  return c == VerdictClass::kRankStuckInHost || c == VerdictClass::kRankBlockedElsewhere ||
         c == VerdictClass::kRankNotRunning || c == VerdictClass::kCommMemberMissing ||
         c == VerdictClass::kUndecided;
}

std::string threadTitle(const format::ThreadState& t) {
  return "thread " + std::to_string(t.tid) + (t.name.empty() ? "" : " \"" + t.name + "\"");
}

}  // namespace

ThreadPlace placeOf(const format::ThreadState& thread, const CallSites& sites) {
  ThreadPlace p;
  p.site.frames = thread.frames;
  borrowSymbols(p.site, sites.symbols());
  const int index = userFrameIndex(p.site.frames, sites.rule());
  if (index >= 0) {
    const format::Frame& f = p.site.frames[index];
    p.site.frame = index;
    p.site.function = f.function;
    p.site.file = f.file;
    p.site.line = f.line;
    p.site.module = moduleBaseName(f.module);
    p.site.module_offset = f.module_offset;
    p.site.python = f.python;
  }
  if (thread.status == format::kThreadNoAnswer || thread.status == format::kThreadNotAsked ||
      thread.status == format::kThreadGone) {
    p.doing = thread.status == format::kThreadGone ? "gone"
              : (thread.flags & format::kThreadInSleepingCall) != 0
                  ? "not asked (a signal would cut its sleep short)"
                  : "no answer";
    if ((thread.flags & format::kThreadSignalBlocked) != 0) p.doing += " (signal blocked)";
    if ((thread.flags & format::kThreadSignalIgnored) != 0) p.doing += " (signal ignored)";
    const std::string state = stateWord(thread.kernel_state);
    if (!state.empty()) p.doing += ", " + state;
    if (!thread.wchan.empty()) p.doing += " in kernel " + thread.wchan;
    if ((thread.flags & format::kThreadPythonListed) != 0)
      p.doing += "; Python frames from the interpreter's thread list";
    if ((thread.flags & format::kThreadUnwoundAsleep) != 0)
      p.doing += "; frames unwound from the registers the kernel saved";
    return p;
  }
  p.doing = stateWord(thread.kernel_state);
  // What it is inside of, when that is not the user frame itself: the innermost named frame
  // (a native call such as read or clock_nanosleep, or a library Python function).
  if (index > 0 && thread.kernel_state != 'R') {
    for (int i = 0; i < index; ++i) {
      const format::Frame& f = p.site.frames[i];
      if (f.function.empty()) continue;
      p.doing += (p.doing.empty() ? "in " : " in ") + frameName(f);
      break;
    }
  }
  return p;
}

const format::ThreadState* ncclThreadOf(const format::RankData& rank) {
  if (rank.threads.empty()) return nullptr;
  const auto find = [&](int tid) -> const format::ThreadState* {
    for (const format::ThreadState& t : rank.threads)
      if (t.tid == tid) return &t;
    return nullptr;
  };
  for (auto it = rank.events.rbegin(); it != rank.events.rend(); ++it) {
    if (it->tid() == 0) continue;
    if (const format::ThreadState* t = find(static_cast<int>(it->tid()))) return t;
    break;
  }
  if (const format::ThreadState* t = find(rank.pid)) return t;
  return &rank.threads.front();
}

void addWhereabouts(const format::LoadedSet& set, const CallSites& sites, Verdict& v) {
  if (!aboutStoppedRanks(v.cls)) return;
  std::vector<int> ranks = v.ranks;
  if (ranks.empty() && v.cls == VerdictClass::kUndecided) {
    // Undecided with no culprit: the ranks that are not waiting are the ones to look at.
    for (const format::RankData& rd : set.ranks) {
      if (std::find(v.waiting.begin(), v.waiting.end(), rd.global_rank) == v.waiting.end())
        ranks.push_back(rd.global_rank);
    }
    if (ranks.size() == set.ranks.size()) return;  // nobody waits: no one stands out
  }
  int named = 0;
  for (const int rank : ranks) {
    const auto rd = std::find_if(set.ranks.begin(), set.ranks.end(),
                                 [&](const format::RankData& r) { return r.global_rank == rank; });
    if (rd == set.ranks.end() || rd->threads.empty()) continue;
    RankThreads rt = threadsOf(*rd, sites);
    const auto it = std::find_if(rt.threads.begin(), rt.threads.end(),
                                 [&](const auto& t) { return t.tid == rt.nccl_tid; });
    if (it != rt.threads.end() && named < 3) {
      const size_t i = static_cast<size_t>(it - rt.threads.begin());
      RankNow now;
      now.rank = rank;
      if (rt.places[i].frame >= 0) now.where = rt.places[i];
      now.thread = threadTitle(*it) + (rt.doing[i].empty() ? "" : ", " + rt.doing[i]);
      now.since_last_call_ns = rt.since_last_call_ns;
      v.headline += nowPhrase(now);
      ++named;
    }
    v.threads.push_back(std::move(rt));
  }
}

void printThreadsText(const Verdict& v, std::ostream& out) {
  for (const RankThreads& rt : v.threads) {
    out << "\nthreads of rank " << rt.rank;
    if (rt.since_last_call_ns >= 0)
      out << " (" << spacedSeconds(static_cast<double>(rt.since_last_call_ns) / 1e9)
          << " after its last NCCL call)";
    out << ":\n";
    for (size_t i = 0; i < rt.threads.size(); ++i) {
      const format::ThreadState& t = rt.threads[i];
      out << "  " << threadTitle(t) << (t.tid == rt.nccl_tid ? " [NCCL]" : "");
      if (rt.places[i].frame >= 0) out << " in " << describeCallSite(rt.places[i]);
      if (!rt.doing[i].empty()) out << ", " << rt.doing[i];
      out << '\n';
      printFrames(rt.places[i].frames, rt.places[i].frame, "    ", out);
    }
  }
}

void addThreadsJson(const Verdict& v, nlohmann::ordered_json& ranks) {
  using Json = nlohmann::ordered_json;
  for (const RankThreads& rt : v.threads) {
    Json threads = Json::array();
    for (size_t i = 0; i < rt.threads.size(); ++i) {
      const format::ThreadState& t = rt.threads[i];
      const CallSite& place = rt.places[i];
      Json frames = framesJson(place.frames);
      threads.push_back(
          {{"tid", t.tid},
           {"name", t.name},
           {"nccl", t.tid == rt.nccl_tid},
           {"answered", t.status == format::kThreadAnswered || t.status == format::kThreadDumper},
           {"kernel_state", t.kernel_state != 0 ? Json(std::string(1, t.kernel_state)) : Json()},
           {"wchan", t.wchan.empty() ? Json() : Json(t.wchan)},
           {"doing", rt.doing[i]},
           {"where", place.frame >= 0 ? Json(describeCallSite(place)) : Json()},
           {"frame", place.frame >= 0 ? Json(place.frame) : Json()},
           {"frames", std::move(frames)}});
    }
    Json* entry = nullptr;
    for (Json& r : ranks)
      if (r.contains("rank") && r["rank"] == rt.rank) entry = &r;
    if (entry == nullptr) {
      ranks.push_back({{"rank", rt.rank}});
      entry = &ranks.back();
    }
    (*entry)["since_last_call_s"] =
        rt.since_last_call_ns >= 0 ? Json(rt.since_last_call_ns / 1e9) : Json();
    (*entry)["threads"] = std::move(threads);
  }
}

void printStacks(const format::LoadedSet& set, const CallSites& sites, std::ostream& out) {
  // One group per distinct (thread role, stack): the role keeps each rank's NCCL thread apart
  // from its helpers, the stack is the frames' names (or module+offset).
  struct Group {
    std::vector<int> ranks;
    std::string title;
    CallSite place;
    std::string doing;
  };
  std::map<std::string, Group> groups;
  std::vector<int> without;
  for (const format::RankData& rd : set.ranks) {
    if (rd.threads.empty()) {
      without.push_back(rd.global_rank);
      continue;
    }
    const RankThreads rt = threadsOf(rd, sites);
    for (size_t i = 0; i < rt.threads.size(); ++i) {
      const format::ThreadState& t = rt.threads[i];
      const bool nccl = t.tid == rt.nccl_tid;
      std::string key = (nccl ? "N|" : "O|") + t.name + "|" + rt.doing[i] + "|";
      for (const format::Frame& f : rt.places[i].frames)
        key += frameName(f) + ":" + std::to_string(f.line) + ";";
      Group& g = groups[key];
      if (g.ranks.empty() || g.ranks.back() != rd.global_rank) g.ranks.push_back(rd.global_rank);
      if (g.title.empty()) {
        g.title = (nccl ? "NCCL thread" : "thread") + (t.name.empty() ? "" : " \"" + t.name + "\"");
        g.place = rt.places[i];
        g.doing = rt.doing[i];
      }
    }
  }
  std::vector<const Group*> order;
  for (const auto& [key, g] : groups) order.push_back(&g);
  std::stable_sort(order.begin(), order.end(), [](const Group* a, const Group* b) {
    if (a->ranks.size() != b->ranks.size()) return a->ranks.size() < b->ranks.size();
    return a->ranks < b->ranks;
  });
  for (const Group* g : order) {
    out << ranksWord(g->ranks) << ": " << g->title;
    if (g->place.frame >= 0) out << " in " << describeCallSite(g->place);
    if (!g->doing.empty()) out << ", " << g->doing;
    out << '\n';
    printFrames(g->place.frames, g->place.frame, "  ", out);
    out << '\n';
  }
  if (!without.empty()) out << ranksWord(without) << ": no thread snapshot recorded\n";
}

}  // namespace ncclrec::analyzer
