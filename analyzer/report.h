// Prints a Verdict: the text report (the verdict line first, then the evidence table, the stacks
// of the differing call sites and each rank's status) or the JSON document of docs/analyzer.md.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/verdict.h"

namespace ncclrec::analyzer {

struct ReportOptions {
  bool color = false;  // ANSI colors: only when writing to a terminal
};

void printVerdictText(const Verdict& v, const ReportOptions& options, std::ostream& out);
// The JSON document of docs/analyzer.md as a value (cxxrun embeds it in report.json);
// `warnings`: the loader's "PATH: why" lines for skipped files.
nlohmann::ordered_json verdictJson(const Verdict& v, const std::vector<std::string>& warnings);
// verdictJson's document, indented by 2, then a newline (ncclrec-analyze --json).
void printVerdictJson(const Verdict& v, const std::vector<std::string>& warnings,
                      std::ostream& out);

}  // namespace ncclrec::analyzer
