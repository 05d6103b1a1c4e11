// The hang report a launcher or ncclrec-watch writes beside the dumps (report/hang_report.h):
// what the metrics need of it, the analyzer's verdict class and the ranks it names. Read with a
// parser that never throws and never runs anything from the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ncclrec::metrics {

struct Report {
  std::string path;
  std::string run_id;
  int attempt = 0;
  std::string reason;         // "hang", "interrupt", "failure"
  std::string verdict_class;  // "rank_gated_collective", ...; "" when the report has no verdict
  std::vector<int> culprits;  // the verdict's ranks, ascending
  int64_t mtime_ns = 0;       // when the file was written (CLOCK_REALTIME)
  friend bool operator==(const Report&, const Report&) = default;
};

// report.json's text; nullopt, with one line in *problem, when it is not such a document.
std::optional<Report> parseReport(std::string_view text, std::string* problem);

// Reads DIR/report.json, else the newest DIR/report.node<N>.json, and keeps it: the file is read
// again only when its size or modification time changes. One thread.
class ReportReader {
 public:
  // The report in `dir`; nullopt when there is none. A file that cannot be read or parsed is
  // said in *problem (naming it) and counts as none.
  std::optional<Report> read(const std::string& dir, std::string* problem);

 private:
  std::string path_;
  int64_t key_ = 0;
  std::optional<Report> report_;
  std::string problem_;
};

}  // namespace ncclrec::metrics
