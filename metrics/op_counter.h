// Counts one black box's NCCL calls for the counters and the duration histogram: every event
// published since the last update is read once (ncclrec-top's reader keeps only the newest 64),
// counted by op and communicator, and followed until it completes (or leaves the ring). The file
// is opened O_RDONLY and mapped PROT_READ: the recorded process never notices.
//
// Cost per update: one header load, the new events, and a re-read of those still incomplete.
// Used by one thread at a time (the exporter's, under its lock). Never throws for any content:
// the header is checked as the reader checks it (format::checkBlackBoxHeader).
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/bbox_layout.h"
#include "format/live_map.h"
#include "format/op_type.h"

namespace ncclrec::metrics {

struct OpKey {
  uint64_t comm_id = 0;  // 0: a call without a communicator
  format::OpType op = format::OpType::kUnknown;
  auto operator<=>(const OpKey&) const = default;
};

struct OpCounts {
  std::map<OpKey, uint64_t> calls;
  std::map<OpKey, uint64_t> completed;
  uint64_t events = 0;     // every call the rank recorded (the ring's write index)
  uint64_t uncounted = 0;  // calls overwritten in the ring before they were read
};

// A completed op whose completion is timed: collectives and sends/receives with an end time
// (not those captured into a CUDA graph, whose marker only says the capture happened).
struct TimedOp {
  format::OpType op;
  double bytes;    // count x element size
  double seconds;  // end - start (start: seen started, else entered)
};

class OpCounter {
 public:
  // Maps `path`. Fails, naming the file, when it cannot be opened or mapped or is not a black box;
  // *starting is set when it is one still being created (try again later).
  static base::StatusOr<std::unique_ptr<OpCounter>> open(const std::string& path,
                                                         bool* starting = nullptr);
  ~OpCounter();
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;

  // Reads what was published since the last update; `timed` gets each op that completed since.
  void update(const std::function<void(const TimedOp&)>& timed);
  const OpCounts& counts() const { return counts_; }

 private:
  explicit OpCounter(std::unique_ptr<format::LiveMap> map);
  const format::BboxHeader* header() const { return map_->header(); }
  // Counts event `index` once it is readable; false while a writer is still filling its slot.
  bool take(uint64_t index, const std::function<void(const TimedOp&)>& timed);
  void follow(const std::function<void(const TimedOp&)>& timed);

  std::unique_ptr<format::LiveMap> map_;
  uint64_t next_ = 0;                    // first event index not read yet
  std::vector<uint64_t> being_written_;  // slots a writer had claimed but not published
  struct Pending {
    uint64_t index;
    OpKey key;
  };
  std::vector<Pending> pending_;  // read while incomplete, ascending index
  OpCounts counts_;
};

}  // namespace ncclrec::metrics
