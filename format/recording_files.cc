#include "format/recording_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "base/text.h"

namespace ncclrec::format {
namespace {

bool endsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

template <typename T>
bool parseNumber(std::string_view text, T* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// Splits off the last ".FIELD" of `*stem`; false when there is no dot.
bool popField(std::string_view* stem, std::string_view* field) {
  const size_t dot = stem->rfind('.');
  if (dot == std::string_view::npos) return false;
  *field = stem->substr(dot + 1);
  *stem = stem->substr(0, dot);
  return true;
}

// "PID" or "PID-K" (K >= 1).
bool parsePid(std::string_view text, int* pid, int* instance) {
  const size_t dash = text.find('-');
  *instance = 0;
  if (dash != std::string_view::npos) {
    if (!parseNumber(text.substr(dash + 1), instance) || *instance < 1) return false;
    text = text.substr(0, dash);
  }
  return parseNumber(text, pid) && *pid > 0;
}

bool validReason(std::string_view reason) {
  if (reason.empty()) return false;
  for (char c : reason) {
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  }
  return true;
}

}  // namespace

std::string RecordingName::fileName() const {
  std::string name = host + "." + std::to_string(pid);
  if (instance > 0) name += "-" + std::to_string(instance);
  if (!isDump()) return name + std::string(kBboxSuffix);
  return name + "." + std::to_string(dump_seq) + "." + reason + std::string(kDumpSuffix);
}

RecordingName RecordingName::dump(uint32_t seq, std::string_view why) const {
  RecordingName d = *this;
  d.dump_seq = seq;
  d.reason = std::string(why);
  return d;
}

std::optional<RecordingName> RecordingName::parse(std::string_view name) {
  RecordingName out;
  std::string_view stem;
  std::string_view field;
  if (endsWith(name, kBboxSuffix)) {
    stem = name.substr(0, name.size() - kBboxSuffix.size());
  } else if (endsWith(name, kDumpSuffix)) {
    stem = name.substr(0, name.size() - kDumpSuffix.size());
    if (!popField(&stem, &field) || !validReason(field)) return std::nullopt;
    out.reason = std::string(field);
    if (!popField(&stem, &field) || !parseNumber(field, &out.dump_seq)) return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (!popField(&stem, &field) || !parsePid(field, &out.pid, &out.instance) || stem.empty())
    return std::nullopt;
  out.host = std::string(stem);
  return out;
}

std::optional<FileStamp> FileStamp::of(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileStamp{static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                   static_cast<uint64_t>(st.st_ino)};
}

std::string TriggerFile::text() const {
  std::string one_line = detail;
  for (char& c : one_line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return "run_id=" + run_id + "\nhost=" + host + "\npid=" + std::to_string(pid) +
         "\nrank=" + std::to_string(rank) + "\nreason=" + reason + "\ndetail=" + one_line + "\n";
}

TriggerFile TriggerFile::parse(std::string_view text) {
  TriggerFile t;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, eq);
    const std::string_view value = line.substr(eq + 1);
    if (key == "run_id") {
      t.run_id = std::string(value);
    } else if (key == "host") {
      t.host = std::string(value);
    } else if (key == "pid") {
      (void)parseNumber(value, &t.pid);
    } else if (key == "rank") {
      t.has_rank = parseNumber(value, &t.rank);
    } else if (key == "reason") {
      t.reason = std::string(value);
    } else if (key == "detail") {
      t.detail = std::string(value);
    }
  }
  return t;
}

bool TriggerFile::concerns(std::string_view id) const {
  return run_id.empty() || id.empty() || run_id == id;
}

bool TriggerFile::write(const std::string& path, std::string* error) const {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const std::string body = text();
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = "cannot write " + tmp + ": " + std::strerror(errno);
    return false;
  }
  const bool ok = ::write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size());
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot publish " + path + ": " + std::strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::string writeSnapshotRequest(const std::string& dir, const std::string& run_id,
                                 const std::string& detail, std::string* error) {
  TriggerFile request;
  request.run_id = run_id;
  request.host = base::hostName();
  request.pid = static_cast<int>(getpid());
  request.reason = std::string(kSnapshotReason);
  request.detail = detail;
  const std::string path = dir + "/" + std::string(kSnapshotRequestFileName);
  return request.write(path, error) ? path : "";
}

}  // namespace ncclrec::format
