#include "report/hang_report.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analyzer/callsite.h"
#include "analyzer/diagnose.h"
#include "analyzer/events.h"
#include "analyzer/launcher_facts.h"
#include "analyzer/report.h"
#include "base/clock.h"
#include "base/proc_state.h"
#include "base/text.h"
#include "format/reader.h"
#include "format/recording_files.h"

namespace ncclrec::report {
namespace {

using Json = nlohmann::ordered_json;

std::string fmtSeconds(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", static_cast<double>(ns) / 1e9);
  return buf;
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

// Calls fn(path, name, stamp) for each black box and dump of process `pid` in `dir`
// (recording_files.h names; any instance "PID-K").
template <typename Fn>
void forEachRecordingOf(const std::string& dir, int pid, Fn fn) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = readdir(d)) {
    const std::optional<format::RecordingName> name = format::RecordingName::parse(e->d_name);
    if (!name || name->pid != pid) continue;
    const std::string path = dir + "/" + e->d_name;
    const std::optional<format::FileStamp> stamp = format::FileStamp::of(path);
    if (stamp) fn(path, *name, *stamp);
  }
  closedir(d);
}

}  // namespace

bool hasDumpOf(const std::string& dir, int pid, int64_t since_ns, const std::string& reason) {
  bool found = false;
  forEachRecordingOf(
      dir, pid,
      [&](const std::string&, const format::RecordingName& name, const format::FileStamp& stamp) {
        if (name.isDump() && (reason.empty() || name.reason == reason) &&
            stamp.mtime_ns >= since_ns)
          found = true;
      });
  return found;
}

bool hasBlackBoxOf(const std::string& dir, int pid) {
  bool found = false;
  forEachRecordingOf(dir, pid,
                     [&](const std::string&, const format::RecordingName& name,
                         const format::FileStamp&) { found |= !name.isDump(); });
  return found;
}

std::string recordingToSend(const std::string& dir, int pid, int64_t since_ns) {
  std::string newest, bbox;
  int64_t newest_ns = -1;
  forEachRecordingOf(dir, pid,
                     [&](const std::string& path, const format::RecordingName& name,
                         const format::FileStamp& stamp) {
                       if (!name.isDump()) {
                         bbox = path;
                       } else if (stamp.mtime_ns >= since_ns && stamp.mtime_ns > newest_ns) {
                         newest_ns = stamp.mtime_ns;
                         newest = path;
                       }
                     });
  return newest.empty() ? bbox : newest;
}

std::string_view reportReasonName(ReportReason reason) {
  switch (reason) {
    case ReportReason::kHang:
      return "hang";
    case ReportReason::kInterrupt:
      return "interrupt";
    case ReportReason::kFailure:
      return "failure";
    case ReportReason::kEnded:
      return "ended";
  }
  return "interrupt";
}

namespace {

namespace rj = format::report_json;

// The report, built once: report.json's document, then printed from it and written.
struct Report {
  Json doc;
  std::string verdict_text;       // the analyzer's text verdict; "" when nothing was loaded
  std::vector<std::string> dirs;  // every directory the recordings were loaded from
};

Json nodeJson(const NodeInfo& n) {
  Json j = {{rj::kNode, n.node}, {rj::kHost, n.host}};
  j["dir"] = n.dir.empty() ? Json(nullptr) : Json(n.dir);
  j["files"] = n.files;
  j["data"] = !n.no_data;
  if (n.silent_s > 0) j[rj::kSilentS] = n.silent_s;
  return j;
}

// The recording of a worker and its last op, in report.json's words.
void addRecording(const format::RankData& r, const analyzer::CallSites& sites, Json* j) {
  (*j)["recording"] = {{"source", r.source_path},
                       {"kind", r.source == format::SourceKind::kDump ? "dump" : "bbox"},
                       {"dump_reason", std::string(format::dumpReasonName(r.dump_reason))},
                       {"dump_detail", r.dump_detail},
                       {"host", r.host},
                       {"global_rank", r.global_rank},
                       {"exited", r.exited},
                       {"fatal_signal", r.fatal_signal},
                       {"events_total", r.events_total}};
  if (r.events.empty()) return;
  const format::EventRecord& e = r.events.back();
  Json ej = {{"op", std::string(format::opName(e.op))},
             {"state", std::string(format::stateName(e.state))},
             {"op_seq", e.op_seq},
             {"count", e.count},
             {"comm_id", e.commId()},
             {"call_site", analyzer::callSite(r, e, sites.rule())}};
  const bool incomplete =
      e.state == format::EventState::kEnqueued || e.state == format::EventState::kStarted;
  const int64_t now = analyzer::snapshotTime(r);
  if (incomplete && e.enqueueNs() > 0 && now > e.enqueueNs()) ej["age_ns"] = now - e.enqueueNs();
  (*j)["last_op"] = std::move(ej);
}

// The recordings of workers whose node sent nothing, found anyway in the directories loaded (a
// dump directory on a filesystem the nodes share), by global rank; matched by host and rank.
std::map<int, const format::RankData*> sharedRecordings(
    const HangReportInput& in, const std::vector<format::RankData>& ranks) {
  std::map<int, const format::RankData*> out;
  for (const WorkerInfo& w : in.workers) {
    if (!w.no_data) continue;
    for (const auto& r : ranks)
      if (r.global_rank == w.rank && r.host == w.host) out[w.rank] = &r;
  }
  return out;
}

// "no data from node N (host H): ..." for each node that sent nothing: whether its ranks are in the
// verdict anyway.
std::vector<std::string> noDataWarnings(const HangReportInput& in,
                                        const std::vector<format::RankData>& ranks) {
  const auto shared = sharedRecordings(in, ranks);
  std::vector<std::string> out;
  for (const NodeInfo& n : in.nodes) {
    if (!n.no_data) continue;
    int of = 0, found = 0;
    for (const WorkerInfo& w : in.workers) {
      if (!w.no_data || w.node != n.node) continue;
      ++of;
      found += shared.count(w.rank) != 0 ? 1 : 0;
    }
    std::string line = "no data from node " + std::to_string(n.node) + " (host " + n.host + ")";
    if (found == 0) {
      line += ": its ranks are missing from the verdict";
    } else if (found == of) {
      line +=
          "; its ranks' recordings are in the dump directory the nodes share, and in the verdict";
    } else {
      line += ": " + std::to_string(of - found) + " of its " + std::to_string(of) +
              " ranks are missing from the verdict (the others' recordings are in the shared "
              "dump directory)";
    }
    out.push_back(std::move(line));
  }
  return out;
}

// report.json's "ranks": one entry per worker the launcher knows, matched with its recording.
Json ranksJson(const HangReportInput& in, const std::vector<format::RankData>& ranks) {
  // Pids repeat across hosts: a worker is matched by host and pid (by pid alone when the
  // launcher did not say which host).
  std::map<std::pair<std::string, int>, const format::RankData*> by_host_pid;
  std::map<int, const format::RankData*> by_pid;
  for (const auto& r : ranks) {
    by_host_pid[{r.host, r.pid}] = &r;
    by_pid[r.pid] = &r;
  }
  const auto shared = sharedRecordings(in, ranks);
  // The last op's call site by the verdict's rule (plumbing learnt from every rank), with the
  // names the dumps hold (no module files read: --events does the same).
  const analyzer::CallSites sites(ranks, {}, /*read_modules=*/false);
  Json out = Json::array();
  for (const WorkerInfo& w : in.workers) {
    Json j = {{rj::kRank, w.rank}, {"local_rank", w.local_rank}};
    if (!in.nodes.empty()) {
      j[rj::kNode] = w.node;
      j[rj::kHost] = w.host;
    }
    if (w.no_data) {
      j["note"] = "no data from node " + std::to_string(w.node) + " (host " + w.host + ")";
      if (auto it = shared.find(w.rank); it != shared.end()) {
        // Its node sent nothing, but its recording is in a directory the nodes share.
        j[rj::kPid] = it->second->pid;
        j["note"] = j["note"].get<std::string>() + "; its recording is in the shared directory";
        addRecording(*it->second, sites, &j);
      } else {
        j[rj::kPid] = nullptr;
        j["recording"] = nullptr;
      }
      out.push_back(std::move(j));
      continue;
    }
    j[rj::kPid] = w.pid;
    j["running"] = w.running;
    if (!w.running) j[rj::kEnded] = w.ended;
    if (w.stopped) j[rj::kStopped] = true;
    if (w.running && w.process_state != 0) {
      j[rj::kProcessState] = std::string(base::processStateName(w.process_state));
      if (!w.wchan.empty()) j[rj::kWchan] = w.wchan;
    }
    const format::RankData* rec = nullptr;
    if (w.host.empty()) {
      if (auto it = by_pid.find(w.pid); it != by_pid.end()) rec = it->second;
    } else if (auto it = by_host_pid.find({w.host, w.pid}); it != by_host_pid.end()) {
      rec = it->second;
    }
    if (rec == nullptr) {
      j["recording"] = nullptr;
    } else {
      addRecording(*rec, sites, &j);
    }
    out.push_back(std::move(j));
  }
  return out;
}

// Loads the recordings, asks the analyzer for its verdict and builds report.json's document.
Report buildReport(const HangReportInput& in) {
  Report rep;
  Json& doc = rep.doc;
  doc[rj::kRunId] = in.run_id;
  doc[rj::kAttempt] = in.attempt;
  doc[rj::kReason] = std::string(reportReasonName(in.reason));
  if (in.reason == ReportReason::kFailure) doc["failure"] = in.failure;
  if (in.reason == ReportReason::kEnded) doc[rj::kEnded] = in.ended;
  doc["trigger"] = in.trigger_text;
  doc["dump_dir"] = in.dump_dir;
  doc["waited_s"] = in.waited_s;
  doc[rj::kVerdict] = nullptr;
  doc["analysis"] = nullptr;
  doc[rj::kRanks] = Json::array();
  doc["warnings"] = Json::array();
  rep.dirs = {in.dump_dir};
  for (const NodeInfo& n : in.nodes)
    if (!n.dir.empty() && n.dir != in.dump_dir) rep.dirs.push_back(n.dir);
  if (!in.nodes.empty()) {
    doc[rj::kNodes] = Json::array();
    for (const NodeInfo& n : in.nodes) doc[rj::kNodes].push_back(nodeJson(n));
  }
  std::vector<format::RankData> ranks;
  auto loaded = format::loadPaths(rep.dirs);
  for (const std::string& w : noDataWarnings(in, loaded.ok() ? loaded->ranks : ranks))
    doc["warnings"].push_back(w);
  for (const std::string& w : in.warnings) doc["warnings"].push_back(w);
  if (loaded.ok()) {
    // What this launcher saw: a rank killed by SIGKILL left no mark, and its peers may have
    // dumped before its heartbeat went stale; a rank that stopped running could not dump.
    std::vector<analyzer::WorkerFacts> facts;
    for (const WorkerInfo& w : in.workers) {
      analyzer::WorkerFacts f{w.pid, w.host, 0, w.running ? w.process_state : '\0', w.wchan};
      if (!w.running && !w.stopped) f.signal = base::signalNumber(w.ended);
      facts.push_back(std::move(f));
    }
    analyzer::applyWorkerFacts(*loaded, facts);
    // Nodes node 0 could no longer hear from: their ranks left nothing here, and the verdict can
    // name the node instead of "no data".
    for (const NodeInfo& n : in.nodes) {
      if (n.silent_s <= 0) continue;
      format::SilentNode silent{n.node, n.host, n.silent_s, {}};
      for (const WorkerInfo& w : in.workers)
        if (w.node == n.node) silent.ranks.push_back(w.rank);
      loaded->silent_nodes.push_back(std::move(silent));
    }
    // The analyzer's verdict first: the one line that says why the job is stuck.
    const analyzer::Verdict verdict = analyzer::diagnose(*loaded);
    std::ostringstream text;
    analyzer::printVerdictText(verdict, {}, text);
    rep.verdict_text = text.str();
    Json analysis = analyzer::verdictJson(verdict, loaded->warnings);
    doc[rj::kVerdict] = analysis[rj::kVerdict];
    doc["analysis"] = std::move(analysis);
    ranks = std::move(loaded->ranks);
    for (const auto& w : loaded->warnings) doc["warnings"].push_back(w);
  } else {
    doc["warnings"].push_back(loaded.status().message());
  }
  doc[rj::kRanks] = ranksJson(in, ranks);
  return rep;
}

// "cxxrun: hang reported (run R, attempt N) by rank K: DETAIL" and its kin.
void printHeadline(const HangReportInput& in, std::ostream& out) {
  const char* what = in.reason == ReportReason::kHang      ? "hang reported"
                     : in.reason == ReportReason::kFailure ? "verdict after the worker failure"
                     : in.reason == ReportReason::kEnded   ? "verdict after the job ended"
                                                           : "job interrupted";
  out << in.tool << ": " << what << " (run " << in.run_id << ", attempt " << in.attempt;
  if (in.reason == ReportReason::kFailure) {
    // The trigger cxxrun wrote for the other ranks' dumps would only repeat the failure.
    out << "; first failure: " << in.failure << ")";
  } else if (in.reason == ReportReason::kEnded) {
    out << "; " << in.ended << ")";
  } else if (!in.trigger_text.empty()) {
    out << ")";
    const format::TriggerFile trigger = format::TriggerFile::parse(in.trigger_text);
    std::string detail = trigger.detail;
    if (detail.empty()) detail = in.trigger_text.substr(0, in.trigger_text.find('\n'));  // a note
    if (trigger.has_rank && trigger.rank >= 0 && in.reason == ReportReason::kHang)
      out << " by rank " << trigger.rank;
    if (!detail.empty()) out << ": " << detail;
  } else {
    out << ")";
  }
  out << "\n";
}

// A row of the launcher's own table (no verdict), from the rank's entry in report.json.
std::string tableRow(const Json& j) {
  const Json& rec = j["recording"];
  std::string recording = rec["kind"] == "dump" ? "dump:" + rec["dump_reason"].get<std::string>()
                                                : std::string("black box");
  if (rec["exited"].get<bool>()) recording += ",exited";
  if (const int sig = rec["fatal_signal"].get<int>(); sig != 0)
    recording += ",sig" + std::to_string(sig);
  std::string last = "-", seq = "-", count = "-", age = "-", site = "-";
  if (j.contains("last_op")) {
    const Json& e = j["last_op"];
    last = e["op"].get<std::string>() + " (" + e["state"].get<std::string>() + ")";
    seq = std::to_string(e["op_seq"].get<uint64_t>());
    count = std::to_string(e["count"].get<uint64_t>());
    site = e["call_site"].get<std::string>();
    if (e.contains("age_ns")) age = fmtSeconds(e["age_ns"].get<int64_t>());
  }
  return pad(std::to_string(j["rank"].get<int>()), 6) +
         pad(std::to_string(j[rj::kPid].get<int>()), 9) + pad(recording, 16) + pad(last, 30) +
         pad(seq, 6) + pad(count, 10) + pad(age, 10) + site;
}

// The headline, the verdict (or, without one, a per-rank table), the workers that left no
// recording and the warnings.
void printReport(const HangReportInput& in, const Report& rep, std::ostream& out) {
  printHeadline(in, out);
  out << rep.verdict_text;
  if (!rep.verdict_text.empty() && rep.verdict_text.back() != '\n') out << "\n";
  // With a verdict, the analyzer's own per-rank list says where each rank is; the launcher only
  // adds the workers that left no recording.
  const bool table = rep.verdict_text.empty();
  if (table) {
    out << pad("rank", 6) << pad("pid", 9) << pad("recording", 16) << pad("last op", 30)
        << pad("seq", 6) << pad("count", 10) << pad("age", 10) << "call site\n";
  }
  const Json& ranks = rep.doc[rj::kRanks];
  for (size_t i = 0; i < in.workers.size(); ++i) {
    const WorkerInfo& w = in.workers[i];
    const Json& j = ranks[i];
    if (w.no_data) continue;
    if (!j["recording"].is_null()) {
      if (table) out << tableRow(j) << "\n";
      continue;
    }
    out << (table ? pad(std::to_string(w.rank), 6) + pad(std::to_string(w.pid), 9) + pad("none", 16)
                  : in.tool + ": rank " + std::to_string(w.rank) + " (pid " +
                        std::to_string(w.pid) + ") left no recording ")
        << (w.running ? "(no NCCL call recorded)" : "(" + w.ended + ")") << "\n";
  }
  for (const auto& w : rep.doc["warnings"])
    out << in.tool << ": warning: " << w.get<std::string>() << "\n";
}

base::Status writeJsonFile(const std::string& tool, const std::string& path, const Json& doc) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    // Trigger text and dump details come from files: never let bad UTF-8 throw.
    f << doc.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
    if (!f) return base::Status::error(tool + ": cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return base::Status::error(tool + ": cannot write " + path);
  return base::okStatus();
}

// report.json's "timeline": CLOCK_REALTIME ns, and seconds after the stall began.
Json timelineJson(const HangReportInput& in, int64_t verdict_ns) {
  Json t;
  t["stall_began_ns"] = in.stall_began_ns;
  t["detected_ns"] = in.detected_ns;
  t["verdict_ns"] = verdict_ns;
  const auto after = [&](int64_t ns) -> Json {
    if (in.stall_began_ns <= 0 || ns <= 0) return nullptr;
    return static_cast<double>(ns - in.stall_began_ns) / 1e9;
  };
  t["detected_after_s"] = after(in.detected_ns);
  t["verdict_after_s"] = after(verdict_ns);
  t["detection"] = in.detection;
  if (!in.detected_by.empty()) t["detected_by"] = in.detected_by;
  return t;
}

// "cxxrun: timeline: the stall began at 16:40:01.203 (...); detected after 1.2 s; verdict after
// 2.9 s".
std::string timelineText(const std::string& tool, const Json& t) {
  std::string s = tool + ": timeline:";
  const int64_t began = t["stall_began_ns"].get<int64_t>();
  if (began > 0) {
    s += " the stall began at " + base::timeOfDay(began) +
         " (the last NCCL call or completion of any rank);";
  }
  const auto after = [&](const char* what, const char* key) {
    if (t[key].is_null()) return;
    char buf[64];
    std::snprintf(buf, sizeof(buf), " %s after %.1f s;", what, t[key].get<double>());
    s += buf;
  };
  after("detected", "detected_after_s");
  if (t.contains("detected_by") && !t["detected_after_s"].is_null()) {
    s.pop_back();
    s += " on " + t["detected_by"].get<std::string>() + ";";
  }
  after("verdict", "verdict_after_s");
  if (s.back() == ';') s.pop_back();
  return s + "\n";
}

}  // namespace

base::StatusOr<std::string> writeHangReport(const HangReportInput& in, std::ostream& out) {
  Report rep = buildReport(in);
  const bool timed = in.stall_began_ns > 0 || in.detected_ns > 0;
  if (timed) rep.doc["timeline"] = timelineJson(in, base::realtimeNs());
  printReport(in, rep, out);
  if (timed) out << timelineText(in.tool, rep.doc["timeline"]);
  const std::string path = in.dump_dir + "/" + in.file_name;
  NCCLREC_RETURN_IF_ERROR(writeJsonFile(in.tool, path, rep.doc));
  std::string all_dirs;
  for (const std::string& d : rep.dirs) all_dirs += " " + d;
  out << in.tool << ": dumps in " << in.dump_dir
      << (rep.dirs.size() > 1 ? " and its node folders" : "") << " (ncclrec-analyze --events"
      << all_dirs << "); report: " << path << "\n";
  return path;
}

}  // namespace ncclrec::report
