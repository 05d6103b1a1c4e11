// Live hang detection under any launcher (docs/launchers.md, "Live detection without cxxrun"): a
// rank whose own oldest incomplete op is older than a second starts ncclrec-watch on NCCLREC_DIR,
// unless one already runs there (it holds NCCLREC_DIR/ncclrec.watch.lock). The watcher reads every
// rank's black box, and on a hang triggers the job's dumps and prints the verdict on the stderr it
// inherited from this rank, which every launcher forwards to the user.
//
// Called by the watchdog thread only. init() allocates (the program's path, argv, environment,
// the lock's fd); poll() allocates nothing, never blocks and never throws: posix_spawn of the
// watcher's first process, which forks the long-lived watcher and exits, and a WNOHANG reap of it
// at the next polls.
#pragma once

#include <spawn.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "format/recording_files.h"

namespace ncclrec::recorder {

inline constexpr std::string_view kWatchLockName = format::kWatchLockFileName;

struct WatchSpawnConfig {
  std::string watcher = "auto";  // NCCLREC_WATCHER: auto, off, or a program's path
  std::string dir;               // NCCLREC_DIR
  std::string run_id;            // the run's id, "" = watch every run in dir
  std::string library_dir;       // where libncclrec.so lies ("" = unknown): auto looks in ../bin
  double stall_s = 1;            // the rank's oldest incomplete op is this old: start a watcher
  double every_s = 10;           // at most one start this often
};

class WatchSpawner {
 public:
  WatchSpawner() = default;
  ~WatchSpawner();
  WatchSpawner(const WatchSpawner&) = delete;
  WatchSpawner& operator=(const WatchSpawner&) = delete;

  // Resolves the program and builds its argv and environment. False when live detection is off
  // (NCCLREC_WATCHER=off, no program found): *why says so when it was not asked to be off.
  bool init(const WatchSpawnConfig& config, std::string* why);

  // One watchdog poll: `oldest_incomplete_ns` is the enqueue time of this rank's oldest
  // incomplete op (0: none), both CLOCK_REALTIME. Starts the watcher when due; reaps the one
  // started before. Returns true when it started one now.
  bool poll(int64_t now_ns, int64_t oldest_incomplete_ns);

  bool enabled() const { return enabled_; }
  int started() const { return started_; }
  // Why a start failed ("" when none did): said once on stderr, and no other start is tried.
  const char* failure() const { return failure_; }

 private:
  bool lockHeld() const;
  void reap();
  void fail();  // says failure_ once on stderr and stops starting watchers

  bool enabled_ = false;
  WatchSpawnConfig config_;
  std::string program_;
  std::vector<std::string> arg_storage_;
  std::vector<char*> argv_;
  std::vector<std::string> env_storage_;
  std::vector<char*> envp_;
  posix_spawn_file_actions_t actions_{};
  posix_spawnattr_t attr_{};
  bool spawn_ready_ = false;  // actions_ and attr_ initialized
  int lock_fd_ = -1;
  int64_t last_start_ns_ = 0;
  pid_t child_ = 0;  // the watcher's first process, until reaped
  int started_ = 0;
  char failure_[256] = {};
};

// The program NCCLREC_WATCHER names: "" for off; for auto, ncclrec-watch in `library_dir`/../bin
// when it is there, else the first executable ncclrec-watch on PATH, else "" with *why set.
std::string resolveWatcher(const std::string& setting, const std::string& library_dir,
                           std::string* why);

}  // namespace ncclrec::recorder
