#include "live/collector.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <system_error>
#include <thread>
#include <tuple>

#include "base/text.h"
#include "format/reader.h"
#include "live/analysis.h"

namespace ncclrec::live {
namespace {

// A resolved run tree is looked at again this often, to follow a new run or attempt.
constexpr int64_t kResolveEveryNs = 2'000'000'000;

bool endsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int64_t mtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// Changes when a file is rewritten or grows (a black box being created).
int64_t statKey(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -2;
  return mtimeNs(st) ^ (static_cast<int64_t>(st.st_size) << 20);
}

// Keeps, of the processes that recorded one global rank, the one that started last. `ranks` is
// sorted by global rank; ranks not known yet (-1) are all kept.
void keepNewestPerRank(std::vector<RankEntry>* ranks) {
  std::vector<RankEntry> kept;
  for (RankEntry& r : *ranks) {
    if (!kept.empty() && r.global_rank >= 0 && kept.back().global_rank == r.global_rank) {
      if (r.start_ns > kept.back().start_ns) kept.back() = std::move(r);
      continue;
    }
    kept.push_back(std::move(r));
  }
  *ranks = std::move(kept);
}

}  // namespace

Collector::Collector(CollectorOptions options)
    : options_(std::move(options)), local_host_(base::hostName()) {
  for (const std::string& e : options_.connect)
    remotes_.emplace(e, std::make_unique<RemoteSource>(e, options_.token));
}

Collector::~Collector() = default;

void Collector::scanDir() {
  ++stats_.dir_scans;
  std::set<std::string> boxes;
  std::set<std::string> dumps;
  if (DIR* d = ::opendir(resolved_.dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (endsWith(name, format::kBboxSuffix)) boxes.insert(resolved_.dir + "/" + name);
      if (endsWith(name, format::kDumpSuffix)) dumps.insert(resolved_.dir + "/" + name);
    }
    ::closedir(d);
  }
  for (auto it = files_.begin(); it != files_.end();) {
    it = boxes.contains(it->first) ? std::next(it) : files_.erase(it);
  }
  for (const std::string& path : boxes) {
    auto [it, added] = files_.try_emplace(path);
    if (added || it->second.watch == nullptr) continue;
    // Same name, another file (removed and created again): start over.
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 &&
        (st.st_ino != it->second.watch->inode() || st.st_dev != it->second.watch->device())) {
      it->second = FileState{};
    }
  }
  for (const std::string& path : dumps) {
    const bool known = std::any_of(dumps_.begin(), dumps_.end(),
                                   [&](const DumpFile& d) { return d.path == path; });
    if (known) continue;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) continue;
    dumps_.push_back({path, mtimeNs(st), false});
  }
  // Newest first: the one most likely to hold the frames of what is on screen.
  std::sort(dumps_.begin(), dumps_.end(),
            [](const DumpFile& a, const DumpFile& b) { return a.mtime_ns > b.mtime_ns; });
}

void Collector::readDir(int64_t now_ns, Snapshot* s) {
  if (resolved_.dir.empty() || !resolved_.problem.empty() || files_.empty() ||
      now_ns - resolved_at_ns_ >= kResolveEveryNs) {
    ResolvedDir r = resolveDir(options_.dir);
    resolved_at_ns_ = now_ns;
    if (r.dir != resolved_.dir) {
      files_.clear();
      dumps_.clear();
      dir_mtime_ns_ = -1;
    }
    resolved_ = std::move(r);
  }
  s->source_label = resolved_.label;
  s->dir = resolved_.dir;
  if (!resolved_.problem.empty()) {
    s->notes.push_back(resolved_.problem);
    return;
  }
  struct stat st {};
  if (::stat(resolved_.dir.c_str(), &st) != 0) {
    s->notes.push_back(resolved_.dir + ": cannot read the directory");
    return;
  }
  if (mtimeNs(st) != dir_mtime_ns_) {
    dir_mtime_ns_ = mtimeNs(st);
    scanDir();
  }
  stats_.files = files_.size();
  for (auto& [path, f] : files_) {
    if (f.watch == nullptr) {
      const int64_t key = statKey(path);
      if (!f.starting && key == f.stat_key) {
        s->notes.push_back(f.error);
        continue;
      }
      bool starting = false;
      auto watch = BboxWatch::open(path, &starting);
      if (!watch.ok()) {
        f.error = watch.status().message();
        f.starting = starting;
        f.stat_key = key;
        if (!starting) s->notes.push_back(f.error);
        continue;
      }
      f.watch = std::move(watch).value();
      f.error.clear();
      f.starting = false;
    }
    f.watch->refresh(now_ns, local_host_);
    s->ranks.push_back(f.watch->entry());
  }
  if (files_.empty() && dumps_.empty()) {
    s->notes.push_back(resolved_.dir + ": no black boxes (*" + std::string(format::kBboxSuffix) +
                       ") yet");
  } else if (files_.empty()) {
    s->notes.push_back(resolved_.dir + ": no black boxes (*" + std::string(format::kBboxSuffix) +
                       "), only " + std::to_string(dumps_.size()) +
                       " dump(s): the job ended; ncclrec-analyze reads them");
  }
}

void Collector::askRemoteSnapshots() {
  for (auto& [endpoint, remote] : remotes_) remote->askSnapshot();
}

void Collector::setAgents(const std::vector<std::string>& endpoints) {
  std::map<std::string, std::unique_ptr<RemoteSource>> kept;
  for (const std::string& e : endpoints) {
    auto it = remotes_.find(e);
    kept.emplace(e, it != remotes_.end() ? std::move(it->second)
                                         : std::make_unique<RemoteSource>(e, options_.token));
  }
  remotes_ = std::move(kept);
}

void Collector::readRemotes(int64_t now_ns, Snapshot* s) {
  // Every agent at once: a refresh waits for the slowest agent, not for the sum of them (each
  // poll is bounded by remote_timeout_s; a RemoteSource is touched by its own thread only).
  std::vector<RemoteSource::Result> results(remotes_.size());
  {
    std::vector<std::thread> polls;
    size_t i = 0;
    for (auto& [endpoint, remote] : remotes_) {
      RemoteSource* source = remote.get();
      RemoteSource::Result* result = &results[i++];
      const auto poll = [=, this] { *result = source->poll(now_ns, options_.remote_timeout_s); };
      if (remotes_.size() == 1) {
        poll();
        continue;
      }
      try {
        polls.emplace_back(poll);
      } catch (const std::system_error&) {
        poll();  // no thread to be had: this one in turn
      }
    }
    for (std::thread& t : polls) t.join();
  }
  std::vector<std::string> discovered;
  std::string labels;
  for (RemoteSource::Result& r : results) {
    if (!r.snapshot_asked.empty()) s->notes.push_back(std::move(r.snapshot_asked));
    if (!r.error.empty()) {
      s->notes.push_back(r.error);
      continue;
    }
    labels += (labels.empty() ? "" : ", ") + r.label;
    for (RankEntry& e : r.ranks) s->ranks.push_back(std::move(e));
    for (std::string& n : r.notes) s->notes.push_back(std::move(n));
    for (std::string& p : r.peers) discovered.push_back(std::move(p));
  }
  // Agents of the other nodes of the job, as the agents know them: asked from the next refresh.
  if (!options_.follow_peers) discovered.clear();
  for (const std::string& p : discovered) {
    if (!remotes_.contains(p))
      remotes_.emplace(p, std::make_unique<RemoteSource>(p, options_.token));
  }
  const std::string what = "agents " + (labels.empty() ? std::string("(none answered)") : labels);
  s->source_label = s->source_label.empty() ? what : s->source_label + " + " + what;
}

void Collector::borrowSymbols(const Snapshot& s) {
  const auto wantNames = [this](const std::vector<format::Frame>& frames) {
    for (const format::Frame& f : frames) {
      if (f.module.empty() || !f.function.empty()) continue;
      std::string key = symbolKey(f.module, f.module_offset);
      if (!symbols_->contains(key)) unresolved_.insert(std::move(key));
    }
  };
  for (const RankEntry& r : s.ranks) {
    Seen& seen = seen_stacks_[rankKey(r)];
    if (r.threads != nullptr && seen.threads != r.threads) {
      seen.threads = r.threads;
      for (const format::ThreadState& t : r.threads->threads) wantNames(t.frames);
    }
    if (seen.stacks == r.history->stacks) continue;
    seen.stacks = r.history->stacks;
    for (const auto& [id, stack] : *seen.stacks) wantNames(stack.frames);
  }
  if (unresolved_.empty()) return;
  auto next = std::find_if(dumps_.begin(), dumps_.end(), [](const DumpFile& d) { return !d.read; });
  if (next == dumps_.end()) return;
  next->read = true;
  ++stats_.dumps_read;
  auto dump = format::loadDump(next->path);
  if (!dump.ok()) return;  // a partial or foreign dump names nothing; the next one may
  std::shared_ptr<SymbolTable> table;
  const auto takeNames = [&](const std::vector<format::Frame>& frames) {
    for (const format::Frame& f : frames) {
      if (f.function.empty() || f.module.empty()) continue;
      std::string key = symbolKey(f.module, f.module_offset);
      if (symbols_->contains(key) || (table != nullptr && table->contains(key))) continue;
      if (table == nullptr) table = std::make_shared<SymbolTable>(*symbols_);
      unresolved_.erase(key);
      table->emplace(std::move(key), f);
    }
  };
  for (const auto& [id, stack] : dump->stacks)
    if (stack.symbolized) takeNames(stack.frames);
  // The dump's thread snapshot names where the threads were (the black box keeps addresses).
  for (const format::ThreadState& t : dump->threads)
    if (t.symbolized) takeNames(t.frames);
  if (table != nullptr) symbols_ = std::move(table);
}

std::shared_ptr<const Snapshot> Collector::collect(int64_t now_ns) {
  auto s = std::make_shared<Snapshot>();
  s->now_ns = now_ns;
  s->hang_after_s = options_.hang_after_s;
  s->library_frames = options_.library_frames;
  if (!options_.dir.empty()) readDir(now_ns, s.get());
  if (!remotes_.empty()) readRemotes(now_ns, s.get());
  // One process read twice (its directory is shared, and an agent sent it too): keep one.
  std::sort(s->ranks.begin(), s->ranks.end(), [](const RankEntry& a, const RankEntry& b) {
    return std::tie(a.global_rank, a.host, a.pid) < std::tie(b.global_rank, b.host, b.pid);
  });
  s->ranks.erase(std::unique(s->ranks.begin(), s->ranks.end(),
                             [](const RankEntry& a, const RankEntry& b) {
                               return a.host == b.host && a.pid == b.pid;
                             }),
                 s->ranks.end());
  if (!options_.run_id.empty())
    std::erase_if(s->ranks, [&](const RankEntry& r) { return r.run_id != options_.run_id; });
  if (options_.newest_per_rank) keepNewestPerRank(&s->ranks);
  if (!options_.dir.empty()) borrowSymbols(*s);
  s->symbols = symbols_;
  analyze(s.get());
  return s;
}

}  // namespace ncclrec::live
