#include "analyzer/events.h"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "analyzer/analyze_mode.h"
#include "analyzer/callsite.h"
#include "analyzer/exit_codes.h"
#include "base/text.h"
#include "format/bbox_layout.h"

namespace ncclrec::analyzer {
namespace {

using analyzer::SiteRule;
using base::Status;
using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;

// Keys in the order they are set: the document reads like the text listing.
using Json = nlohmann::ordered_json;

constexpr std::string_view kTool = "ncclrec-analyze: ";

template <class T>
Json valueOrNull(bool present, const T& value) {
  return present ? Json(value) : Json(nullptr);
}

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "0xABcd" -> "abcd"; the digits the user typed, compared as a prefix of the 16-digit id.
std::string commFilterDigits(const std::string& text) {
  std::string s = lower(text);
  if (s.starts_with("0x")) s = s.substr(2);
  return s;
}

// Age and duration, to three significant-ish digits: "850ns", "12.3us", "1.50ms", "61.0s".
std::string formatDuration(int64_t ns) {
  if (ns < 0) return "-";
  char buf[32];
  if (ns < 1'000) {
    std::snprintf(buf, sizeof(buf), "%lldns", static_cast<long long>(ns));
  } else if (ns < 1'000'000) {
    std::snprintf(buf, sizeof(buf), "%.1fus", ns / 1e3);
  } else if (ns < 1'000'000'000) {
    std::snprintf(buf, sizeof(buf), "%.2fms", ns / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1fs", ns / 1e9);
  }
  return buf;
}

// ncclResult_t by value (third_party/nccl/nccl.h).
std::string resultName(int result) {
  static constexpr std::string_view kNames[] = {
      "ok",          "cuda-error",    "system-error", "internal-error",
      "invalid-arg", "invalid-usage", "remote-error", "in-progress",
  };
  if (result >= 0 && static_cast<size_t>(result) < std::size(kNames)) {
    return std::string(kNames[result]);
  }
  return "error " + std::to_string(result);
}

// The return code is known once the call returned: for a host-completed op that is when it
// completes; a CUDA-timed op returned before its markers were even queued.
bool resultKnown(const EventRecord& e) {
  const bool in_flight =
      e.state == format::EventState::kEnqueued || e.state == format::EventState::kStarted;
  return !in_flight || (e.flags & format::kEventCudaTimed) != 0;
}

bool isComplete(const EventRecord& e) {
  return e.state == EventState::kCompleted || e.state == EventState::kFailed || e.endNs() > 0;
}

// {"took", "within" or "age", nanoseconds}; nanoseconds < 0 when unknown. An op completed through
// CUDA events has its start and end stamped when the watchdog saw them fire, once per poll
// (NCCLREC_POLL_MS), so only "completed within this long of its enqueue" is known of it.
std::pair<std::string_view, int64_t> timing(const RankData& rank, const EventRecord& e) {
  if (isComplete(e) && (e.flags & format::kEventCudaTimed) != 0) {
    return {"within", e.endNs() > 0 && e.enqueueNs() > 0 ? e.endNs() - e.enqueueNs() : -1};
  }
  if (isComplete(e)) {
    const int64_t from = e.startNs() != 0 ? e.startNs() : e.enqueueNs();
    return {"took", e.endNs() > 0 && from > 0 ? e.endNs() - from : -1};
  }
  const int64_t now = snapshotTime(rank);
  return {"age", e.enqueueNs() > 0 && now > 0 ? now - e.enqueueNs() : -1};
}

std::string baseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string sourceKindName(format::SourceKind kind) {
  return kind == format::SourceKind::kDump ? "dump" : "black box";
}

// The rank's marks for the header line: "exited", "fatal SIGSEGV", "dump: hang (...)".
std::string marks(const RankData& r) {
  std::string s;
  auto add = [&s](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  if (r.exited) add("exited");
  if (r.fatal_signal != 0) add("fatal " + base::signalName(r.fatal_signal));
  if (r.dump_reason != format::DumpReason::kNone) {
    std::string d = "dump: " + std::string(format::dumpReasonName(r.dump_reason));
    if (!r.dump_detail.empty()) d += " (" + r.dump_detail + ")";
    add(d);
  }
  return s.empty() ? "no exit mark" : s;
}

std::vector<const EventRecord*> selectEvents(const RankData& r, const EventsOptions& o) {
  const std::string digits = o.comm ? commFilterDigits(*o.comm) : "";
  std::vector<const EventRecord*> out;
  for (const EventRecord& e : r.events) {
    if (!o.comm || hex16(e.commId()).starts_with(digits)) out.push_back(&e);
  }
  if (o.last && out.size() > *o.last) out.erase(out.begin(), out.end() - *o.last);
  return out;
}

std::string orDash(int v) { return v < 0 ? "-" : std::to_string(v); }

void printText(const std::vector<const RankData*>& ranks, const EventsOptions& o,
               const SiteRule& rule, std::ostream& out) {
  bool first = true;
  for (const RankData* r : ranks) {
    if (!first) out << '\n';
    first = false;
    out << "== rank " << (r->global_rank < 0 ? "?" : std::to_string(r->global_rank));
    if (r->world_size > 0) out << '/' << r->world_size;
    out << "  host " << (r->host.empty() ? "?" : r->host) << "  pid " << r->pid << "  "
        << sourceKindName(r->source) << ' ' << r->source_path << "  run "
        << (r->run_id.empty() ? "-" : r->run_id) << "  events " << r->events_total << " recorded, "
        << r->events_lost << " lost  " << marks(*r) << '\n';
    const std::vector<const EventRecord*> events = selectEvents(*r, o);
    if (events.empty()) {
      out << "  (no events" << (o.comm ? " on that communicator" : "") << ")\n";
      continue;
    }
    char line[512];
    std::snprintf(line, sizeof(line),
                  "%8s  %-24s %-8s %7s %6s %10s %-10s %-12s %5s %-9s %-13s %-13s %s\n", "#", "op",
                  "comm", "rank", "seq", "count", "dtype", "redop", "peer", "state", "result",
                  "time", "call site");
    out << line;
    for (const EventRecord* e : events) {
      const std::string rank_str =
          e->rank() < 0 ? "-" : std::to_string(e->rank()) + "/" + std::to_string(e->nranks());
      const std::string comm = e->commId() == 0 ? "-" : hex16(e->commId()).substr(0, 8);
      const std::string seq = e->op_seq == 0 ? "-" : std::to_string(e->op_seq);
      const auto [what, ns] = timing(*r, *e);
      const std::string time = ns < 0 ? "-" : std::string(what) + " " + formatDuration(ns);
      std::snprintf(
          line, sizeof(line), "%8llu  %-24s %-8s %7s %6s %10llu %-10s %-12s %5s %-9s %-13s %-13s ",
          static_cast<unsigned long long>(e->index), std::string(format::opName(e->op)).c_str(),
          comm.c_str(), rank_str.c_str(), seq.c_str(), static_cast<unsigned long long>(e->count),
          std::string(format::dataTypeName(e->dtype)).c_str(),
          std::string(format::redOpName(e->redop)).c_str(), orDash(e->peer()).c_str(),
          std::string(format::stateName(e->state)).c_str(),
          resultKnown(*e) ? resultName(e->result).c_str() : "-", time.c_str());
      out << line << callSite(*r, *e, rule) << '\n';
    }
  }
}

Json eventJson(const RankData& r, const EventRecord& e, const SiteRule& rule) {
  Json j;
  j["index"] = e.index;
  j["op"] = format::opName(e.op);
  j["comm_id"] = valueOrNull(e.commId() != 0, hex16(e.commId()));
  j["rank"] = e.rank();
  j["nranks"] = e.nranks();
  j["seq"] = e.op_seq;
  j["count"] = e.count;
  j["dtype"] = valueOrNull(e.dtype >= 0, format::dataTypeName(e.dtype));
  j["redop"] = valueOrNull(e.redop >= 0, format::redOpName(e.redop));
  j["peer"] = valueOrNull(e.peer() >= 0, e.peer());
  j["state"] = format::stateName(e.state);
  j["result"] = valueOrNull(resultKnown(e), resultName(e.result));
  j["result_code"] = valueOrNull(resultKnown(e), e.result);
  j["device"] = e.device();
  j["stream"] = e.stream();
  j["tid"] = e.tid();
  j["group_depth"] = e.group_depth;
  j["flags"] = e.flags;
  j["enqueue_ns"] = e.enqueueNs();
  j["start_ns"] = e.startNs();
  j["end_ns"] = e.endNs();
  const auto [what, ns] = timing(r, e);
  j[what == "took"     ? "duration_ns"
    : what == "within" ? "completed_within_ns"
                       : "age_ns"] = valueOrNull(ns >= 0, ns);
  j["stack_id"] = valueOrNull(e.stackId() != format::kNoStack, e.stackId());
  j["call_site"] = callSite(r, e, rule);
  return j;
}

// The stacks the listed events use: frames innermost first (Python ones first), and the index
// of the call-site frame.
Json stacksJson(const RankData& r, const std::vector<const EventRecord*>& events,
                const SiteRule& rule) {
  std::set<uint32_t> ids;
  for (const EventRecord* e : events) {
    if (e->stackId() != format::kNoStack) ids.insert(e->stackId());
  }
  Json stacks = Json::array();
  for (uint32_t id : ids) {
    const auto it = r.stacks.find(id);
    if (it == r.stacks.end()) continue;
    Json st;
    st["id"] = id;
    const int site = rule.siteFrame(it->second.frames);
    st["call_site_frame"] = valueOrNull(site >= 0, site);
    st["frames"] = Json::array();
    for (const format::Frame& f : it->second.frames) {
      st["frames"].push_back({{"function", f.function},
                              {"file", f.file},
                              {"line", f.line},
                              {"module", f.module},
                              {"module_offset", f.module_offset},
                              {"address", f.address},
                              {"python", f.python}});
    }
    stacks.push_back(std::move(st));
  }
  return stacks;
}

void printJson(const std::vector<const RankData*>& ranks, const EventsOptions& o,
               const std::vector<std::string>& warnings, const SiteRule& rule, std::ostream& out) {
  Json doc;
  doc["ranks"] = Json::array();
  for (const RankData* r : ranks) {
    Json j;
    j["global_rank"] = r->global_rank;
    j["world_size"] = r->world_size;
    j["local_rank"] = r->local_rank;
    j["host"] = r->host;
    j["pid"] = r->pid;
    j["source"] = r->source_path;
    j["source_kind"] = r->source == format::SourceKind::kDump ? "dump" : "bbox";
    j["run_id"] = r->run_id;
    j["exe"] = r->exe;
    j["events_total"] = r->events_total;
    j["events_lost"] = r->events_lost;
    j["exited"] = r->exited;
    j["fatal_signal"] = r->fatal_signal;
    j["dump_reason"] = format::dumpReasonName(r->dump_reason);
    j["dump_detail"] = r->dump_detail;
    j["snapshot_ns"] = snapshotTime(*r);
    j["events"] = Json::array();
    const std::vector<const EventRecord*> events = selectEvents(*r, o);
    for (const EventRecord* e : events) j["events"].push_back(eventJson(*r, *e, rule));
    j["stacks"] = stacksJson(*r, events, rule);
    doc["ranks"].push_back(std::move(j));
  }
  doc["warnings"] = warnings;
  // Names come from files and may hold any bytes: replace invalid UTF-8 instead of throwing.
  out << doc.dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
}

}  // namespace

int64_t snapshotTime(const RankData& r) {
  if (r.source == format::SourceKind::kDump && r.dump_ns > 0) return r.dump_ns;
  // A black box may carry the reason of an older dump (reader.h): its time is only a lower bound.
  int64_t t = std::max({r.heartbeat_ns, r.exit_ns, r.fatal_ns, r.dump_ns});
  for (const EventRecord& e : r.events) t = std::max({t, e.enqueueNs(), e.startNs(), e.endNs()});
  return t;
}

std::string callSite(const RankData& r, const EventRecord& e) {
  static const SiteRule kLibraryLayersOnly;
  return callSite(r, e, kLibraryLayersOnly);
}

std::string callSite(const RankData& r, const EventRecord& e, const SiteRule& rule) {
  const auto it = r.stacks.find(e.stackId());
  if (e.stackId() == format::kNoStack || it == r.stacks.end() || it->second.frames.empty()) {
    return "-";
  }
  const std::vector<format::Frame>& frames = it->second.frames;
  const size_t site = static_cast<size_t>(rule.siteFrame(frames));
  for (size_t i = site; i < frames.size(); ++i) {
    const format::Frame& f = frames[i];
    if (f.function.empty()) continue;
    std::string s = f.function;
    if (!f.file.empty()) {
      s += " " + baseName(f.file) + (f.line > 0 ? ":" + std::to_string(f.line) : "");
    }
    return s;
  }
  const format::Frame& f = frames[site];
  char off[32];
  if (!f.module.empty()) {
    std::snprintf(off, sizeof(off), "+0x%llx", static_cast<unsigned long long>(f.module_offset));
    return baseName(f.module) + off;
  }
  std::snprintf(off, sizeof(off), "0x%llx", static_cast<unsigned long long>(f.address));
  return off;
}

Status validateEventsOptions(const EventsOptions& o) {
  if (o.comm) {
    const std::string digits = commFilterDigits(*o.comm);
    if (digits.empty() || digits.size() > 16 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isxdigit(c); })) {
      return Status::error("--comm: '" + *o.comm +
                           "' is not a communicator id (up to 16 hex digits)");
    }
  }
  if (o.rank && *o.rank < 0) return Status::error("--rank: must be 0 or more");
  return base::okStatus();
}

Status printEvents(const format::LoadedSet& set, const EventsOptions& o, std::ostream& out) {
  NCCLREC_RETURN_IF_ERROR(validateEventsOptions(o));
  std::vector<const RankData*> ranks;
  std::set<int> known;
  for (const RankData& r : set.ranks) {
    known.insert(r.global_rank);
    if (!o.rank || r.global_rank == *o.rank) ranks.push_back(&r);
  }
  if (ranks.empty()) {
    std::string have;
    for (int k : known) have += (have.empty() ? "" : ",") + std::to_string(k);
    return Status::error("--rank " + std::to_string(*o.rank) +
                         ": no such rank in the recordings (ranks: " + have + ")");
  }
  // The rule learns from every loaded rank, listed or not: a call site is the same whichever
  // ranks --rank shows.
  // Names from the dumps only: the listing never read module files, and stays as quick.
  const CallSites sites(set.ranks, o.library_frames, /*read_modules=*/false);
  if (o.json) {
    printJson(ranks, o, set.warnings, sites.rule(), out);
  } else {
    printText(ranks, o, sites.rule(), out);
  }
  return base::okStatus();
}

int runEvents(const std::vector<std::string>& paths, const EventsOptions& options,
              std::ostream& out, std::ostream& err) {
  if (const Status st = validateEventsOptions(options); !st.ok()) {
    err << kTool << st.message() << '\n';
    return kExitBadInput;
  }
  // Every run: --events lists what was recorded, whichever run it belongs to.
  std::optional<format::LoadedSet> set = loadRecordings(paths, false, std::nullopt, err);
  if (!set) return kExitBadInput;
  if (const Status st = printEvents(*set, options, out); !st.ok()) {
    err << kTool << st.message() << '\n';
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace ncclrec::analyzer
