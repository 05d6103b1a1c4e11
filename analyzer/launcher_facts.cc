#include "analyzer/launcher_facts.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "base/text.h"

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
  std::ifstream in(dir + "/report.json");
  if (!in) return out;
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("ranks") || !doc["ranks"].is_array()) return out;
  for (const nlohmann::json& w : doc["ranks"]) {
    if (!w.is_object() || !w.contains("pid") || !w["pid"].is_number_integer() ||
        !w.contains("ended") || !w["ended"].is_string()) {
      continue;
    }
    // Ended by the launcher's own signal, when it stopped the job: not a fact about the rank.
    if (w.contains("stopped") && w["stopped"].is_boolean() && w["stopped"].get<bool>()) continue;
    WorkerEnd end;
    end.pid = w["pid"].get<int>();
    end.signal = base::signalNumber(w["ended"].get<std::string>());
    if (w.contains("host") && w["host"].is_string()) end.host = w["host"].get<std::string>();
    if (end.signal > 0) out.push_back(std::move(end));
  }
  return out;
}

}  // namespace ncclrec::analyzer
