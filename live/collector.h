// collect(): builds ncclrec-top's Snapshot from the black boxes in a directory (cxxrun's run
// tree resolved to one attempt, source_dir.h) and from cxxrun agents of other hosts
// (remote_source.h). Incremental: a file is mapped once and re-read only where its header says
// it changed (bbox_watch.h); the directory is listed again only when its mtime changes; a rank
// whose history did not change shares it with the previous snapshot.
//
// Names for the stacks' return addresses are borrowed from the dumps in the directory (written
// and symbolized by the dump writer inside the recorded processes): when a stack frame has no
// name yet and an unread dump is there, one dump is read per refresh.
//
// Owned and called by one thread (the collector thread of app.cc, or the caller of --once); a
// refresh asks its agents in parallel, one short-lived thread each, so that it waits for the
// slowest agent rather than for the sum of them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "live/bbox_watch.h"
#include "live/remote_source.h"
#include "live/snapshot.h"
#include "live/source_dir.h"

namespace ncclrec::live {

struct CollectorOptions {
  std::string dir;                   // read black boxes here ("" = only agents)
  std::vector<std::string> connect;  // cxxrun agents, host:port
  std::string token;                 // the job token the agents want
  double hang_after_s = 60;
  double remote_timeout_s = 2;  // per agent and refresh (the agents are asked at once)
  // Also ask the agents each reply lists (the job's other nodes, by the names they advertise).
  bool follow_peers = true;
  std::vector<std::string> library_frames;  // Snapshot::library_frames
  std::string run_id;                       // keep only the ranks of this run ("" = every run)
  // Several processes recorded one global rank (a reused directory, a restarted rank): keep the
  // one that started last.
  bool newest_per_rank = false;
};

class Collector {
 public:
  explicit Collector(CollectorOptions options);
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // The state at `now_ns` (CLOCK_REALTIME), analyzed (analysis.h).
  std::shared_ptr<const Snapshot> collect(int64_t now_ns);
  // The next collect() asks every agent (--connect) for a thread snapshot of its ranks; what each
  // agent did goes into that snapshot's notes.
  void askRemoteSnapshots();
  // From the next collect() on, the agents read are exactly `endpoints` (host:port): an agent
  // read before and still listed keeps its connection, one no longer listed is closed. The
  // cxxrun agent of node 0 widens its view this way while its ranks wait for other nodes' ranks
  // (launcher/agent_live.cc), and narrows it again with {}.
  void setAgents(const std::vector<std::string>& endpoints);
  size_t agents() const { return remotes_.size(); }

  // What the last collect() read: ranks from black boxes here, files listed, dumps parsed.
  struct Stats {
    size_t files = 0;
    uint64_t dir_scans = 0;
    uint64_t dumps_read = 0;
  };
  Stats stats() const { return stats_; }

 private:
  struct FileState {
    std::unique_ptr<BboxWatch> watch;
    std::string error;      // why it could not be opened
    bool starting = false;  // being created: retried at every refresh, not reported
    int64_t stat_key = -1;  // size and mtime when it failed; a change makes us try again
  };
  struct DumpFile {
    std::string path;
    int64_t mtime_ns = 0;
    bool read = false;
  };

  void readDir(int64_t now_ns, Snapshot* s);
  void scanDir();
  void readRemotes(int64_t now_ns, Snapshot* s);
  void borrowSymbols(const Snapshot& s);

  CollectorOptions options_;
  std::string local_host_;
  ResolvedDir resolved_;
  int64_t resolved_at_ns_ = 0;
  int64_t dir_mtime_ns_ = -1;
  std::map<std::string, FileState> files_;  // by path
  std::vector<DumpFile> dumps_;
  std::shared_ptr<const SymbolTable> symbols_ = std::make_shared<const SymbolTable>();
  std::unordered_set<std::string> unresolved_;  // frame keys no dump named yet
  // What borrowSymbols looked at last, by rank key: its stacks and its thread snapshot.
  struct Seen {
    std::shared_ptr<const StackMap> stacks;
    std::shared_ptr<const ThreadsView> threads;
  };
  std::unordered_map<std::string, Seen> seen_stacks_;
  std::map<std::string, std::unique_ptr<RemoteSource>> remotes_;  // by endpoint
  Stats stats_;
};

}  // namespace ncclrec::live
