#include "live/source_dir.h"

#include <filesystem>
#include <system_error>
#include <vector>

#include "format/reader.h"

namespace ncclrec::live {
namespace {

namespace fs = std::filesystem;

bool endsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// attempt_<N> -> N, else -1.
long attemptNumber(const std::string& name) {
  static constexpr std::string_view kPrefix = "attempt_";
  if (name.rfind(kPrefix, 0) != 0 || name.size() == kPrefix.size()) return -1;
  long n = 0;
  for (size_t i = kPrefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || n > 1000000) return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

}  // namespace

ResolvedDir resolveDir(const std::string& base) {
  ResolvedDir out;
  out.dir = base;
  out.label = base;
  std::error_code ec;
  const fs::file_status st = fs::status(base, ec);
  if (ec || !fs::exists(st)) {
    out.problem = base + ": no such directory (yet)";
    return out;
  }
  if (!fs::is_directory(st)) {
    out.problem = base + ": not a directory";
    return out;
  }
  std::string why;
  fs::path cur = base;
  for (int depth = 0; depth < 3; ++depth) {
    bool has_records = false;
    struct Sub {
      std::string name;
      fs::file_time_type mtime;
      long attempt;
    };
    std::vector<Sub> subs;
    for (fs::directory_iterator it(cur, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      std::error_code e2;
      if (it->is_directory(e2)) {
        subs.push_back({name, it->last_write_time(e2), attemptNumber(name)});
      } else if (endsWith(name, format::kBboxSuffix) || endsWith(name, format::kDumpSuffix)) {
        has_records = true;
      }
    }
    if (ec) {
      out.problem = cur.string() + ": " + ec.message();
      break;
    }
    if (has_records || subs.empty()) break;
    const Sub* pick = nullptr;
    size_t attempts = 0;
    for (const Sub& s : subs) attempts += s.attempt >= 0 ? 1 : 0;
    for (const Sub& s : subs) {
      if (attempts > 0) {
        if (s.attempt >= 0 && (pick == nullptr || s.attempt > pick->attempt)) pick = &s;
      } else if (pick == nullptr || s.mtime > pick->mtime ||
                 (s.mtime == pick->mtime && s.name > pick->name)) {
        pick = &s;
      }
    }
    cur /= pick->name;
    if (!why.empty()) why += ", ";
    const size_t among = attempts > 0 ? attempts : subs.size();
    const std::string what = attempts > 0 ? "attempt" : "run";
    why +=
        among == 1 ? "the only " + what : "newest of " + std::to_string(among) + " " + what + "s";
  }
  out.dir = cur.string();
  out.label = why.empty() ? out.dir : out.dir + " (" + why + ")";
  return out;
}

}  // namespace ncclrec::live
