#include "metrics/op_counter.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "format/bbox_ring.h"
#include "format/reader.h"

namespace ncclrec::metrics {
namespace {

using format::BboxHeader;

template <class T>
T loadLive(const T& field) {
  return format::atomicField(const_cast<T&>(field)).load(std::memory_order_acquire);
}

// Hands a completed op to `timed` when its completion is timed: a collective or a send/receive
// with an end time, not captured into a CUDA graph (its marker only says the capture happened).
void timeOp(const format::Event& e, format::OpType op,
            const std::function<void(const TimedOp&)>& timed) {
  if (!(format::isCollective(op) || format::isP2p(op)) || e.end_ns <= 0 ||
      (e.flags & format::kEventGraphCaptured) != 0) {
    return;
  }
  const int64_t start = e.start_ns > 0 ? e.start_ns : e.enqueue_ns;
  const int elem = e.dtype == 0xff ? 0 : std::max(0, format::dataTypeSize(e.dtype));
  timed({op, static_cast<double>(e.count) * elem,
         static_cast<double>(std::max<int64_t>(0, e.end_ns - start)) / 1e9});
}

// A writer claimed the slot of `index` and has not published it yet (seq odd for that index).
bool claimedNotPublished(const BboxHeader* h, uint64_t index) {
  const format::Event* slot = &format::ringSlots(h)[index & (h->ring_capacity - 1)];
  return loadLive(slot->seq) == 2 * index + 1;
}

}  // namespace

base::StatusOr<std::unique_ptr<OpCounter>> OpCounter::open(const std::string& path,
                                                           bool* starting) {
  auto map = format::LiveMap::open(path, starting);
  if (!map.ok()) return map.status();
  return std::unique_ptr<OpCounter>(new OpCounter(std::move(*map)));
}

OpCounter::OpCounter(std::unique_ptr<format::LiveMap> map) : map_(std::move(map)) {}

OpCounter::~OpCounter() = default;

bool OpCounter::take(uint64_t index, const std::function<void(const TimedOp&)>& timed) {
  format::Event e;
  if (!format::readEvent(header(), index, &e)) {
    if (claimedNotPublished(header(), index)) return false;
    ++counts_.uncounted;  // overwritten by a newer event before we read it
    return true;
  }
  const OpKey key{e.comm_id, static_cast<format::OpType>(e.op)};
  ++counts_.calls[key];
  const auto state = static_cast<format::EventState>(e.state);
  if (state == format::EventState::kCompleted) {
    ++counts_.completed[key];
    timeOp(e, key.op, timed);
  } else if (state == format::EventState::kEnqueued || state == format::EventState::kStarted) {
    pending_.push_back({index, key});
  }
  return true;
}

// Ops read while incomplete: counted once they complete; dropped once they failed or their slot
// was reused (the ring wrapped past them: their completion is not known).
void OpCounter::follow(const std::function<void(const TimedOp&)>& timed) {
  std::vector<Pending> still;
  for (const Pending& p : pending_) {
    format::Event e;
    if (!format::readEvent(header(), p.index, &e)) {
      if (claimedNotPublished(header(), p.index)) still.push_back(p);
      continue;
    }
    const auto state = static_cast<format::EventState>(e.state);
    if (state == format::EventState::kEnqueued || state == format::EventState::kStarted) {
      still.push_back(p);
      continue;
    }
    if (state != format::EventState::kCompleted) continue;
    ++counts_.completed[p.key];
    timeOp(e, p.key.op, timed);
  }
  pending_ = std::move(still);
}

void OpCounter::update(const std::function<void(const TimedOp&)>& timed) {
  const BboxHeader* h = header();
  const uint64_t write_index = loadLive(h->write_index);
  counts_.events = write_index;
  follow(timed);
  std::vector<uint64_t> retry;
  for (uint64_t index : being_written_) {
    if (!take(index, timed)) retry.push_back(index);
  }
  if (write_index < next_) next_ = write_index;  // never expected; keeps us bounded
  // Events older than the ring's reach are gone: counted as such, never read.
  if (write_index - next_ > h->ring_capacity) {
    counts_.uncounted += write_index - h->ring_capacity - next_;
    next_ = write_index - h->ring_capacity;
  }
  for (uint64_t i = next_; i < write_index; ++i) {
    if (!take(i, timed)) retry.push_back(i);
  }
  next_ = write_index;
  // A writer that died mid-event never publishes it: its slot is dropped once the ring passed it.
  std::erase_if(retry, [&](uint64_t i) { return i + h->ring_capacity <= write_index; });
  being_written_ = std::move(retry);
}

}  // namespace ncclrec::metrics
