#include "analyzer/launcher_facts.h"

#include <fstream>
#include <sstream>

#include "base/text.h"
#include "format/report_json.h"

namespace ncclrec::analyzer {

void applyWorkerEnds(format::LoadedSet& set, const std::vector<WorkerEnd>& ends) {
  for (const WorkerEnd& end : ends) {
    if (end.signal <= 0 || end.pid <= 0) continue;
    for (format::RankData& r : set.ranks) {
      if (r.pid != end.pid || (!end.host.empty() && r.host != end.host)) continue;
      if (r.exited || r.fatal_signal != 0 || r.dump_ns != 0) continue;
      r.fatal_signal = end.signal;
    }
  }
}

std::vector<WorkerEnd> workerEndsFromReport(const std::string& dir) {
  std::vector<WorkerEnd> out;
  std::ifstream in(dir + "/" + std::string(format::report_json::kFileName), std::ios::binary);
  if (!in) return out;
  std::stringstream text;
  text << in.rdbuf();
  std::string problem;  // not a report: the facts are optional, so no warning
  const auto doc = format::report_json::parseReportJson(text.str(), &problem);
  if (!doc) return out;
  for (const format::report_json::Worker& w : doc->workers) {
    // Ended by the launcher's own signal, when it stopped the job: not a fact about the rank.
    if (w.stopped || w.ended.empty()) continue;
    WorkerEnd end{w.pid, w.host, base::signalNumber(w.ended)};
    if (end.signal > 0) out.push_back(std::move(end));
  }
  return out;
}

}  // namespace ncclrec::analyzer
