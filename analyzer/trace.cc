#include "analyzer/trace.h"

#include <algorithm>
#include <climits>
#include <map>
#include <nlohmann/json.hpp>

#include "analyzer/events.h"

namespace ncclrec::analyzer {
namespace {

using Json = nlohmann::json;

bool culprit(const Verdict& v, int rank) {
  return std::find(v.ranks.begin(), v.ranks.end(), rank) != v.ranks.end();
}

// The verdict's op in a rank's stream: the collective or p2p op with its seq on its communicator;
// for a verdict on a call that takes no seq (a communicator's creation, for device_collision), that
// call on that communicator.
bool divergent(const Verdict& v, const format::EventRecord& e) {
  if (e.commId() != v.comm_id || v.comm_id == 0) return false;
  if (v.seq != 0) {
    return e.op_seq == v.seq && format::isCollective(e.op) == format::isCollective(v.op);
  }
  return v.op != format::OpType::kUnknown && e.op == v.op && e.op_seq == 0;
}

}  // namespace

void writeTrace(const format::LoadedSet& set, const Verdict& v, const SiteRule& rule,
                std::ostream& out) {
  int64_t origin = INT64_MAX;
  for (const format::RankData& r : set.ranks) {
    for (const format::EventRecord& e : r.events) {
      if (e.enqueueNs() > 0) origin = std::min(origin, e.enqueueNs());
    }
  }
  if (origin == INT64_MAX) origin = 0;
  const auto us = [origin](int64_t ns) { return static_cast<double>(ns - origin) / 1e3; };
  // Written event by event: a trace of 1024 ranks x 2000 ops is too big to build as one value.
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  const auto emit = [&](const Json& j) {
    out << (first ? "" : ",\n") << j.dump(-1, ' ', false, Json::error_handler_t::replace);
    first = false;
  };
  for (const format::RankData& r : set.ranks) {
    const int pid = r.global_rank >= 0 ? r.global_rank : 1'000'000 + r.pid;
    emit({{"ph", "M"},
          {"name", "process_name"},
          {"pid", pid},
          {"args",
           {{"name", "rank " + std::to_string(r.global_rank) + " (" + r.host + ":" +
                         std::to_string(r.pid) + ")"}}}});
    emit({{"ph", "M"},
          {"name", "process_sort_index"},
          {"pid", pid},
          {"args", {{"sort_index", pid}}}});
    std::map<uint64_t, int> tid_of;  // comm id -> track
    const int64_t now = snapshotTime(r);
    for (const format::EventRecord& e : r.events) {
      const auto [it, added] = tid_of.emplace(e.commId(), static_cast<int>(tid_of.size()));
      if (added) {
        emit({{"ph", "M"},
              {"name", "thread_name"},
              {"pid", pid},
              {"tid", it->second},
              {"args",
               {{"name", e.commId() == 0 ? std::string("no communicator")
                                         : "comm " + shortCommId(e.commId())}}}});
      }
      if (e.enqueueNs() <= 0) continue;
      const bool done = e.endNs() > 0;
      const int64_t end = done ? e.endNs() : std::max(now, e.enqueueNs());
      std::string name(format::opName(e.op));
      if (e.op_seq != 0) name += " #" + std::to_string(e.op_seq);
      Json slice = {{"ph", "X"},
                    {"cat", "nccl"},
                    {"name", name},
                    {"pid", pid},
                    {"tid", it->second},
                    {"ts", us(e.enqueueNs())},
                    {"dur", static_cast<double>(end - e.enqueueNs()) / 1e3},
                    {"args",
                     {{"count", e.count},
                      {"dtype", std::string(format::dataTypeName(e.dtype))},
                      {"state", std::string(format::stateName(e.state))},
                      {"call_site", callSite(r, e, rule)}}}};
      const bool marked = divergent(v, e);
      if (marked) slice["cname"] = culprit(v, r.global_rank) ? "terrible" : "bad";
      if (!done) slice["args"]["pending"] = true;
      emit(slice);
      if (marked && culprit(v, r.global_rank)) {
        emit({{"ph", "i"},
              {"s", "p"},
              {"name", std::string(verdictClassName(v.cls))},
              {"pid", pid},
              {"tid", it->second},
              {"ts", us(e.enqueueNs())},
              {"args", {{"headline", v.headline}}}});
      }
    }
  }
  out << "\n]}\n";
}

}  // namespace ncclrec::analyzer
