// Incremental reader of one black box (format/bbox_layout.h), live or left by a dead
// process. The file is opened O_RDONLY and mapped PROT_READ once; each refresh looks at the
// header's live words and reads only what they say changed: events past the last index read,
// the live fields of the ops still incomplete, comm records claimed since, their live counters,
// stacks first referenced, modules added, the thread snapshot when a new one was taken. The
// recorded process never notices a reader.
//
// Used by one thread (the collector's). Never throws for any file content: every offset is
// checked against the mapping before use, as format::parseBlackBox does.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/proc_state.h"
#include "base/status.h"
#include "format/bbox_layout.h"
#include "format/live_map.h"
#include "live/snapshot.h"

namespace ncclrec::live {

class BboxWatch {
 public:
  // Maps `path`. Fails, naming the file, when it cannot be opened or mapped, is not a black box
  // (bad magic), is of a newer version, or its header is corrupt or larger than the file. A file
  // still being created (shorter than a header, or no magic yet) fails with *starting = true.
  static base::StatusOr<std::unique_ptr<BboxWatch>> open(const std::string& path,
                                                         bool* starting = nullptr);
  ~BboxWatch();
  BboxWatch(const BboxWatch&) = delete;
  BboxWatch& operator=(const BboxWatch&) = delete;

  // Reads what changed. `local_host` is this machine's host name: a rank of this host without an
  // exit or fatal mark whose heartbeat stopped is checked with kill(pid, 0).
  void refresh(int64_t now_ns, const std::string& local_host);

  // The rank as of the last refresh; its history is shared with earlier entries while unchanged.
  const RankEntry& entry() const { return entry_; }
  dev_t device() const { return map_->device(); }
  ino_t inode() const { return map_->inode(); }

 private:
  BboxWatch(std::string path, std::unique_ptr<format::LiveMap> map);
  // Appends the stack ids of the ops it added to *stack_ids.
  bool readNewEvents(uint64_t write_index, std::vector<uint32_t>* stack_ids);
  bool updateIncomplete();
  bool readComms();
  bool readModules();
  bool internStacks(const std::vector<uint32_t>& ids);
  // The thread region, when its sequence word moved since the last copy: one load otherwise.
  void readThreads();
  // The link table while the rank waits in a call (RankEntry::links); dropped when it does not.
  void readLinks(int64_t now_ns);
  void updateLiveness(int64_t now_ns, const std::string& local_host);

  const format::BboxHeader* header() const { return map_->header(); }

  std::string path_;
  std::unique_ptr<format::LiveMap> map_;
  uint64_t next_index_ = 0;      // first event index not read yet
  std::vector<uint64_t> retry_;  // indexes that were being written when last looked at
  std::deque<OpView> ops_;       // at most kRecentOps, ascending index
  std::vector<CommView> comms_;
  std::vector<uint32_t> comm_slots_;  // comm table index of each entry of comms_
  uint32_t comms_read_ = 0;           // comm records published and read
  std::vector<format::Module> modules_;
  uint32_t modules_read_ = 0;
  std::shared_ptr<const StackMap> stacks_ = std::make_shared<const StackMap>();
  uint32_t threads_seq_ = 0;  // sequence word of the snapshot in entry_.threads (0: none yet)
  bool gone_ = false;         // kill(pid, 0) said ESRCH at heartbeat gone_heartbeat_
  int64_t gone_heartbeat_ = 0;
  // What /proc said of a silent process that is there, read at most once a second per heartbeat.
  std::optional<base::ProcessState> proc_;
  int64_t proc_heartbeat_ = 0;
  int64_t proc_read_ns_ = 0;  // 0: never read
  bool first_ = true;
  RankEntry entry_;
};

}  // namespace ncclrec::live
