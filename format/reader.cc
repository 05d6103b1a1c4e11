// loadDump, loadFile and loadPaths (reader.h); black boxes are parsed in bbox_reader.cc.
#include "format/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "format/bbox_layout.h"
#include "format/dump_io.h"
#include "format/flight_recorder.h"
#include "format/pickle_reader.h"

namespace ncclrec::format {
namespace {

namespace fs = std::filesystem;

// The file in one read() where the kernel allows, into `buf` from its start (its size never
// shrinks: a buffer reused file after file is allocated and zeroed once). A dump is written whole
// and then renamed into place, so its size is known and fixed (a file that shrinks meanwhile is
// read to its new end). Returns the bytes read, a view of `buf`.
base::StatusOr<std::string_view> readWholeFileInto(const std::string& path, std::string* buf) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it has no effect on regular files.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return base::Status::error(path + ": " + std::strerror(errno));
  const auto fail = [&](const std::string& why) {
    ::close(fd);
    return base::Status::error(path + ": " + why);
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  const size_t size = static_cast<size_t>(st.st_size);
  if (buf->size() < size) buf->resize(size);
  size_t used = 0;
  while (used < size) {
    const ssize_t n = ::read(fd, buf->data() + used, size - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(std::string("read error: ") + std::strerror(errno));
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  ::close(fd);
  return std::string_view(buf->data(), used);
}

base::StatusOr<std::string> readWholeFile(const std::string& path) {
  std::string bytes;
  NCCLREC_ASSIGN_OR_RETURN(const std::string_view read, readWholeFileInto(path, &bytes));
  bytes.resize(read.size());
  return bytes;
}

// A Flight Recorder dump's bytes, in a buffer of the calling thread that the next call reuses
// (a buffer over 64 MiB is given back after its file is read; see parseFlightRecorder).
base::StatusOr<std::string_view> readFlightRecorderFile(const std::string& path) {
  thread_local std::string buf;
  if (buf.size() > (64u << 20)) std::string().swap(buf);
  return readWholeFileInto(path, &buf);
}

base::StatusOr<std::string> readPrefix(const std::string& path, size_t n) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec) return base::Status::error(path + ": " + ec.message());
  if (!fs::is_regular_file(st)) return base::Status::error(path + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return base::Status::error(path + ": " + std::strerror(errno));
  std::string bytes(n, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(n));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The black box is preferred over the newest dump only when it went on recording after it. The
// chosen file's model is moved out, never copied (a rank can hold hundreds of thousands of events).
RankData mergeProcess(std::vector<RankData> files, std::vector<std::string>* warnings) {
  RankData* bbox = nullptr;
  RankData* dump = nullptr;
  for (RankData& f : files) {
    if (f.source == SourceKind::kBlackBox) {
      if (bbox != nullptr) {
        warnings->push_back(f.source_path + ": same host and pid as " + bbox->source_path +
                            "; keeping the one with more events");
      }
      if (bbox == nullptr || f.events_total > bbox->events_total) bbox = &f;
    } else if (dump == nullptr || f.dump_ns > dump->dump_ns) {
      dump = &f;
    }
  }
  if (dump == nullptr) return std::move(*bbox);
  if (bbox == nullptr || bbox->events_total <= dump->events_total) return std::move(*dump);
  RankData merged = std::move(*bbox);
  for (auto& [id, stack] : merged.stacks) {
    auto it = dump->stacks.find(id);
    if (it != dump->stacks.end() && it->second.symbolized) stack = std::move(it->second);
  }
  // The same snapshot, symbolized in the dump.
  if (merged.threads_ns == dump->threads_ns) merged.threads = std::move(dump->threads);
  merged.dump_reason = dump->dump_reason;
  merged.dump_ns = dump->dump_ns;
  merged.dump_detail = std::move(dump->dump_detail);
  return merged;
}

// Loads `files` with `load` on up to one thread per core (each file is parsed independently);
// results keep the order of `files`.
template <class Load>
auto loadFilesInParallel(const std::vector<std::string>& files, Load load) {
  using Result = decltype(load(std::string()));
  std::vector<std::optional<Result>> results(files.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < files.size(); i = next.fetch_add(1)) {
      results[i].emplace(load(files[i]));
    }
  };
  const size_t threads =
      std::min<size_t>(files.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads: the calling thread does the rest
    }
  }
  work();
  for (std::thread& t : pool) t.join();
  std::vector<Result> out;
  out.reserve(files.size());
  for (auto& r : results) out.push_back(std::move(*r));
  return out;
}

// Enough to tell the formats apart, JSON with leading blanks included.
constexpr size_t kSniffBytes = 64;

// A file found in a directory without an ncclrec suffix is read when its content looks like a
// Flight Recorder dump. nullopt: it is something else (a JSON document without pg_config, such as
// a saved verdict or trace), skipped silently like any other unrelated file.
base::StatusOr<std::optional<RankData>> loadIfFlightRecorder(const std::string& path) {
  NCCLREC_ASSIGN_OR_RETURN(const std::string prefix, readPrefix(path, kSniffBytes));
  if (!looksLikeFlightRecorder(prefix)) return std::optional<RankData>();
  NCCLREC_ASSIGN_OR_RETURN(const std::string_view bytes, readFlightRecorderFile(path));
  if (!looksLikePickle(bytes)) {
    // A trace or verdict saved beside the dumps may be large: no DOM for JSON without the key.
    if (bytes.find("\"pg_config\"") == std::string_view::npos) return std::optional<RankData>();
    base::StatusOr<nlohmann::json> doc = parseFlightRecorderJson(bytes, path);
    if (!doc.ok() || !doc->is_object() || !doc->contains("pg_config")) {
      return std::optional<RankData>();
    }
    NCCLREC_ASSIGN_OR_RETURN(RankData data,
                             flightRecorderToModel(*doc, path, rankFromFileName(path)));
    data.source_path = path;
    return std::optional<RankData>(std::move(data));
  }
  NCCLREC_ASSIGN_OR_RETURN(
      RankData data, parseFlightRecorder(bytes.data(), bytes.size(), path, rankFromFileName(path)));
  data.source_path = path;
  return std::optional<RankData>(std::move(data));
}

// A rank recorded by ncclrec and by PyTorch's Flight Recorder (a job run under ncclrec with FR
// on, both writing to one directory): ncclrec's recording is the richer one; the FR dump goes,
// with a warning. `set.ranks` is sorted by global rank.
void dropFlightRecorderDuplicates(LoadedSet& set) {
  std::set<int> recorded;
  for (const RankData& r : set.ranks) {
    if (r.pid != 0 && r.global_rank >= 0) recorded.insert(r.global_rank);
  }
  std::erase_if(set.ranks, [&](const RankData& r) {
    if (r.pid != 0 || !recorded.contains(r.global_rank)) return false;
    set.warnings.push_back(r.source_path + ": rank " + std::to_string(r.global_rank) +
                           " also has an ncclrec recording; this Flight Recorder dump is left out");
    return true;
  });
}

}  // namespace

base::StatusOr<RankData> loadDump(const std::string& path) {
  NCCLREC_ASSIGN_OR_RETURN(const std::string bytes, readWholeFile(path));
  return parseDump(bytes.data(), bytes.size(), path);
}

base::StatusOr<RankData> loadFile(const std::string& path) {
  NCCLREC_ASSIGN_OR_RETURN(const std::string prefix, readPrefix(path, kSniffBytes));
  if (prefix.size() >= sizeof(kBboxMagic) &&
      std::memcmp(prefix.data(), kBboxMagic, sizeof(kBboxMagic)) == 0) {
    return loadBlackBox(path);
  }
  if (prefix.size() >= kDumpMagicPrefixBytes &&
      std::memcmp(prefix.data(), kDumpFileMagic, kDumpMagicPrefixBytes) == 0) {
    return loadDump(path);
  }
  if (prefix.empty()) return base::Status::error(path + ": empty file");
  if (looksLikeFlightRecorder(prefix)) {
    NCCLREC_ASSIGN_OR_RETURN(const std::string_view bytes, readFlightRecorderFile(path));
    NCCLREC_ASSIGN_OR_RETURN(RankData data, parseFlightRecorder(bytes.data(), bytes.size(), path,
                                                                rankFromFileName(path)));
    data.source_path = path;
    return data;
  }
  return base::Status::error(path + ": not an ncclrec black box or dump (bad magic)");
}

base::StatusOr<LoadedSet> loadPaths(const std::vector<std::string>& paths) {
  LoadedSet set;
  std::vector<RankData> loaded;
  for (const std::string& path : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec) return base::Status::error(path + ": " + ec.message());
    if (!fs::is_directory(st)) {
      NCCLREC_ASSIGN_OR_RETURN(RankData data, loadFile(path));
      loaded.push_back(std::move(data));
      continue;
    }
    std::vector<std::string> files;
    std::vector<std::string> others;  // maybe Flight Recorder dumps: told by content
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (endsWith(name, kBboxSuffix) || endsWith(name, kDumpSuffix)) {
        files.push_back(it->path().string());
      } else if (it->is_regular_file(ec)) {
        others.push_back(it->path().string());
      }
    }
    if (ec) return base::Status::error(path + ": " + ec.message());
    std::sort(files.begin(), files.end());
    std::sort(others.begin(), others.end());
    const size_t fr_before = loaded.size();
    for (base::StatusOr<std::optional<RankData>>& fr :
         loadFilesInParallel(others, loadIfFlightRecorder)) {
      if (!fr.ok()) {
        set.warnings.push_back(fr.status().message());
      } else if (fr->has_value()) {
        loaded.push_back(std::move(**fr));
      }
    }
    const bool found_fr = loaded.size() > fr_before;
    for (base::StatusOr<RankData>& data : loadFilesInParallel(files, loadFile)) {
      if (!data.ok()) {
        set.warnings.push_back(data.status().message());
        continue;
      }
      loaded.push_back(std::move(data).value());
    }
    if (files.empty() && !found_fr) {
      set.warnings.push_back(path + ": no black boxes or dumps (*" + std::string(kBboxSuffix) +
                             ", *" + std::string(kDumpSuffix) +
                             ") nor PyTorch Flight Recorder dumps");
    }
  }
  if (loaded.empty()) {
    if (paths.empty()) return base::Status::error("no paths given");
    std::string what = paths.size() == 1 ? paths.front() + ": no readable black box or dump"
                                         : "none of the " + std::to_string(paths.size()) +
                                               " paths holds a readable black box or dump";
    if (!set.warnings.empty()) what += " (" + set.warnings.front() + ")";
    return base::Status::error(what);
  }

  // pid 0: no process identity (Flight Recorder dumps): each file is its own process.
  std::map<std::tuple<std::string, int, std::string>, std::vector<RankData>> by_process;
  for (RankData& data : loaded) {
    auto key = std::make_tuple(data.host, data.pid, data.pid == 0 ? data.source_path : "");
    by_process[key].push_back(std::move(data));
  }
  for (auto& [key, files] : by_process) {
    set.ranks.push_back(mergeProcess(std::move(files), &set.warnings));
  }
  std::sort(set.ranks.begin(), set.ranks.end(), [](const RankData& a, const RankData& b) {
    return std::tie(a.global_rank, a.host, a.pid) < std::tie(b.global_rank, b.host, b.pid);
  });
  dropFlightRecorderDuplicates(set);
  return set;
}

}  // namespace ncclrec::format
