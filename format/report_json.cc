#include "format/report_json.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/proc_state.h"

namespace ncclrec::format::report_json {
namespace {

using Json = nlohmann::json;

// The value of `key` in `obj` when it is of the type `is` accepts; nullptr otherwise.
const Json* field(const Json& obj, const char* key, bool (Json::*is)() const) {
  const auto it = obj.find(key);
  return it != obj.end() && ((*it).*is)() ? &*it : nullptr;
}

}  // namespace

std::string nodeFileName(int node) { return "report.node" + std::to_string(node) + ".json"; }

bool isNodeFileName(std::string_view name) {
  constexpr std::string_view kPrefix = "report.node", kSuffix = ".json";
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.substr(0, kPrefix.size()) != kPrefix ||
      name.substr(name.size() - kSuffix.size()) != kSuffix) {
    return false;
  }
  const std::string_view digits =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  return std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<Document> parseReportJson(std::string_view text, std::string* problem) {
  const Json doc = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    *problem = "not a JSON object";
    return std::nullopt;
  }
  Document d;
  if (const Json* v = field(doc, kRunId, &Json::is_string)) d.run_id = v->get<std::string>();
  if (const Json* v = field(doc, kAttempt, &Json::is_number_integer)) d.attempt = v->get<int>();
  if (const Json* v = field(doc, kReason, &Json::is_string)) d.reason = v->get<std::string>();
  if (const Json* verdict = field(doc, kVerdict, &Json::is_object)) {
    if (const Json* c = field(*verdict, kVerdictClass, &Json::is_string))
      d.verdict_class = c->get<std::string>();
    if (const Json* ranks = field(*verdict, kVerdictRanks, &Json::is_array)) {
      for (const Json& k : *ranks)
        if (k.is_number_integer()) d.culprits.push_back(k.get<int>());
    }
  }
  std::sort(d.culprits.begin(), d.culprits.end());
  d.culprits.erase(std::unique(d.culprits.begin(), d.culprits.end()), d.culprits.end());
  if (const Json* nodes = field(doc, kNodes, &Json::is_array)) {
    for (const Json& n : *nodes) {
      const Json* index = n.is_object() ? field(n, kNode, &Json::is_number_integer) : nullptr;
      if (index == nullptr) continue;
      Node node;
      node.node = index->get<int>();
      if (const Json* v = field(n, kHost, &Json::is_string)) node.host = v->get<std::string>();
      if (const Json* v = field(n, kSilentS, &Json::is_number); v != nullptr && *v > 0)
        node.silent_s = v->get<double>();
      d.nodes.push_back(std::move(node));
    }
  }
  if (const Json* ranks = field(doc, kRanks, &Json::is_array)) {
    for (const Json& w : *ranks) {
      if (!w.is_object()) continue;
      const Json* rank = field(w, kRank, &Json::is_number_integer);
      const Json* node = field(w, kNode, &Json::is_number_integer);
      if (rank != nullptr && node != nullptr) {
        for (Node& n : d.nodes)
          if (n.node == node->get<int>()) n.ranks.push_back(rank->get<int>());
      }
      const Json* pid = field(w, kPid, &Json::is_number_integer);
      if (pid == nullptr) continue;  // a rank of a node that sent nothing
      Worker worker;
      worker.pid = pid->get<int>();
      if (rank != nullptr) worker.rank = rank->get<int>();
      if (const Json* v = field(w, kHost, &Json::is_string)) worker.host = v->get<std::string>();
      if (const Json* v = field(w, kEnded, &Json::is_string)) worker.ended = v->get<std::string>();
      if (const Json* v = field(w, kStopped, &Json::is_boolean)) worker.stopped = v->get<bool>();
      if (const Json* v = field(w, kProcessState, &Json::is_string))
        worker.process_state = base::processStateLetter(v->get<std::string>());
      if (const Json* v = field(w, kWchan, &Json::is_string)) worker.wchan = v->get<std::string>();
      d.workers.push_back(std::move(worker));
    }
  }
  return d;
}

}  // namespace ncclrec::format::report_json
