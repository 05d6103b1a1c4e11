#include "analyzer/launcher_facts.h"

#include <fstream>
#include <optional>
#include <sstream>

#include "base/text.h"
#include "format/report_json.h"

namespace ncclrec::analyzer {

void applyWorkerFacts(format::LoadedSet& set, const std::vector<WorkerFacts>& workers) {
  for (const WorkerFacts& w : workers) {
    if (w.pid <= 0) continue;
    for (format::RankData& r : set.ranks) {
      if (r.pid != w.pid || (!w.host.empty() && r.host != w.host)) continue;
      if (w.process_state != 0) {
        r.process_state = w.process_state;
        r.process_wchan = w.wchan;
      }
      if (w.signal <= 0 || r.exited || r.fatal_signal != 0 || r.dump_ns != 0) continue;
      r.fatal_signal = w.signal;
    }
  }
}

namespace {

// report.json in `dir`; nullopt when there is none or it is not one (the facts are optional, so
// no warning).
std::optional<format::report_json::Document> readReport(const std::string& dir) {
  std::ifstream in(dir + "/" + std::string(format::report_json::kFileName), std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  std::string problem;
  return format::report_json::parseReportJson(text.str(), &problem);
}

}  // namespace

std::vector<WorkerFacts> workerFactsFromReport(const std::string& dir) {
  std::vector<WorkerFacts> out;
  const auto doc = readReport(dir);
  if (!doc) return out;
  for (const format::report_json::Worker& w : doc->workers) {
    WorkerFacts facts{w.pid, w.host, 0, w.process_state, w.wchan};
    // Ended by the launcher's own signal, when it stopped the job: not a fact about the rank.
    if (!w.stopped && !w.ended.empty()) facts.signal = base::signalNumber(w.ended);
    if (facts.signal > 0 || facts.process_state != 0) out.push_back(std::move(facts));
  }
  return out;
}

std::vector<format::SilentNode> silentNodesFromReport(const std::string& dir) {
  std::vector<format::SilentNode> out;
  const auto doc = readReport(dir);
  if (!doc) return out;
  for (const format::report_json::Node& n : doc->nodes)
    if (n.silent_s > 0) out.push_back({n.node, n.host, n.silent_s, n.ranks});
  return out;
}

}  // namespace ncclrec::analyzer
