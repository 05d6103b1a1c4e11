#include "metrics/report_file.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "format/report_json.h"

namespace ncclrec::metrics {
namespace {

// Reports are a few hundred KB at most (thousands of ranks); anything larger is not one.
constexpr int64_t kMaxReportBytes = 64ll << 20;

int64_t mtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// False when `path` is not a regular file.
bool statFile(const std::string& path, int64_t* size, int64_t* mtime_ns) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  *size = st.st_size;
  *mtime_ns = mtimeNs(st);
  return true;
}

// DIR/report.json, else the newest report.node<N>.json (another node's local report, when node
// 0's job-wide one is on another filesystem); "" when neither is there.
std::string findReport(const std::string& dir) {
  const std::string main = dir + "/" + std::string(format::report_json::kFileName);
  int64_t size = 0, mtime = 0;
  if (statFile(main, &size, &mtime)) return main;
  std::string best;
  int64_t best_mtime = -1;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (!format::report_json::isNodeFileName(name)) continue;
      struct stat st {};
      const std::string path = dir + "/" + name;
      if (::stat(path.c_str(), &st) != 0) continue;
      if (mtimeNs(st) > best_mtime) {
        best_mtime = mtimeNs(st);
        best = path;
      }
    }
    ::closedir(d);
  }
  return best;
}

}  // namespace

std::optional<Report> parseReport(std::string_view text, std::string* problem) {
  auto doc = format::report_json::parseReportJson(text, problem);
  if (!doc) return std::nullopt;
  if (doc->reason.empty()) {  // cxxrun's list of ranks alone, before any hang or failure
    *problem = "no \"reason\": not a hang report";
    return std::nullopt;
  }
  Report r;
  r.run_id = std::move(doc->run_id);
  r.attempt = doc->attempt;
  r.reason = std::move(doc->reason);
  r.verdict_class = std::move(doc->verdict_class);
  r.culprits = std::move(doc->culprits);
  return r;
}

std::optional<Report> ReportReader::read(const std::string& dir, std::string* problem) {
  problem->clear();
  const std::string path = dir.empty() ? std::string() : findReport(dir);
  int64_t size = 0, mtime = 0;
  const bool found = !path.empty() && statFile(path, &size, &mtime);
  // Changes when the file is rewritten (0: there is none).
  const int64_t key = found ? (mtime ^ (size << 20)) | 1 : 0;
  if (path == path_ && key == key_) {
    *problem = problem_;
    return report_;
  }
  path_ = path;
  key_ = key;
  report_.reset();
  problem_.clear();
  if (key == 0) return report_;
  if (size > kMaxReportBytes) {
    problem_ = path + ": larger than a hang report; ignored";
  } else {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    if (in.is_open()) text << in.rdbuf();
    std::string why;
    if (!in.is_open()) {
      problem_ = path + ": cannot be read";
    } else if (auto r = parseReport(text.str(), &why)) {
      r->path = path;
      r->mtime_ns = mtime;
      report_ = std::move(r);
    } else {
      problem_ = path + ": " + why;
    }
  }
  *problem = problem_;
  return report_;
}

}  // namespace ncclrec::metrics
