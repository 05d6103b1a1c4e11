#include "live/bbox_watch.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>

#include "format/bbox_event.h"
#include "format/bbox_ring.h"
#include "format/links.h"
#include "format/live_map.h"
#include "format/reader.h"
#include "live/rank_convert.h"

namespace ncclrec::live {
namespace {

using format::BboxHeader;

// A rank of this host whose watchdog has not stamped the heartbeat for this long is checked
// with kill(pid, 0); one on another host is called stale after kStaleNs.
constexpr int64_t kPidCheckNs = 1'000'000'000;
constexpr int64_t kStaleNs = 10'000'000'000;

template <class T>
T loadLive(const T& field) {
  return format::atomicField(const_cast<T&>(field)).load(std::memory_order_acquire);
}

std::string boundedString(const char* chars, size_t capacity) {
  return std::string(chars, strnlen(chars, capacity));
}

OpView toOp(const format::Event& e, uint64_t index) {
  return opViewOf(format::eventFieldsOf(e, index));
}

}  // namespace

base::StatusOr<std::unique_ptr<BboxWatch>> BboxWatch::open(const std::string& path,
                                                           bool* starting) {
  auto map = format::LiveMap::open(path, starting);
  if (!map.ok()) return map.status();
  return std::unique_ptr<BboxWatch>(new BboxWatch(path, std::move(*map)));
}

BboxWatch::BboxWatch(std::string path, std::unique_ptr<format::LiveMap> map)
    : path_(std::move(path)), map_(std::move(map)) {
  const BboxHeader* h = header();
  entry_.source = path_;
  entry_.pid = h->pid;
  entry_.local_rank = h->local_rank;
  entry_.host = boundedString(h->host, sizeof(h->host));
  entry_.run_id = boundedString(h->run_id, sizeof(h->run_id));
  entry_.exe = boundedString(h->exe, sizeof(h->exe));
  entry_.start_ns = h->start_realtime_ns;
}

BboxWatch::~BboxWatch() = default;

void BboxWatch::refresh(int64_t now_ns, const std::string& local_host) {
  const BboxHeader* h = header();
  entry_.global_rank = loadLive(h->global_rank);
  entry_.world_size = loadLive(h->world_size);
  entry_.heartbeat_ns = loadLive(h->heartbeat_ns);
  entry_.exit_ns = loadLive(h->exit_ns);
  entry_.fatal_signal = loadLive(h->fatal_signal);
  entry_.fatal_ns = loadLive(h->fatal_ns);
  entry_.hang_event_index = loadLive(h->hang_event_index);
  entry_.last_dump_ns = loadLive(h->last_dump_ns);
  entry_.last_dump_reason = static_cast<format::DumpReason>(loadLive(h->last_dump_reason));
  updateLiveness(now_ns, local_host);

  const uint64_t write_index = loadLive(h->write_index);
  bool changed = first_;
  changed |= readModules();
  changed |= readComms();
  changed |= updateIncomplete();
  std::vector<uint32_t> new_stack_ids;
  changed |= readNewEvents(write_index, &new_stack_ids);
  changed |= internStacks(new_stack_ids);
  readThreads();
  readLinks(now_ns);
  first_ = false;
  if (!changed) return;
  auto history = std::make_shared<RankHistory>();
  history->ops.assign(ops_.begin(), ops_.end());
  history->comms = comms_;
  history->stacks = stacks_;
  history->events_total = write_index;
  history->events_lost = write_index > h->ring_capacity ? write_index - h->ring_capacity : 0;
  entry_.history = std::move(history);
}

void BboxWatch::updateLiveness(int64_t now_ns, const std::string& local_host) {
  entry_.process_state = 0;
  entry_.process_wchan.clear();
  if (entry_.exit_ns != 0 || loadLive(header()->exited) != 0) {
    entry_.liveness = Liveness::kExited;
    return;
  }
  if (entry_.fatal_signal != 0) {
    entry_.liveness = Liveness::kCrashed;
    return;
  }
  const int64_t beat = entry_.heartbeat_ns;
  const int64_t silent = beat > 0 && now_ns > beat ? now_ns - beat : 0;
  if (entry_.host != local_host) {
    entry_.liveness = silent > kStaleNs ? Liveness::kStale : Liveness::kAlive;
    return;
  }
  if (beat > 0 && silent < kPidCheckNs) {
    gone_ = false;
    entry_.liveness = Liveness::kAlive;
    return;
  }
  if (!gone_ || beat != gone_heartbeat_) {
    gone_ = entry_.pid > 0 && ::kill(entry_.pid, 0) != 0 && errno == ESRCH;
    gone_heartbeat_ = beat;
  }
  if (!gone_ && entry_.pid > 0) {
    // Silent, and its pid is there: a zombie has ended; a process stopped (SIGSTOP, a debugger)
    // or in uninterruptible sleep runs none of its code, its watchdog included.
    if (proc_read_ns_ == 0 || beat != proc_heartbeat_ || now_ns - proc_read_ns_ >= kPidCheckNs) {
      proc_ = base::readProcessState(entry_.pid);
      proc_heartbeat_ = beat;
      proc_read_ns_ = now_ns;
    }
    if (const std::optional<base::ProcessState>& ps = proc_) {
      if (ps->state == 'Z' || ps->state == 'X') {
        entry_.liveness = goneLiveness(entry_.last_dump_ns);
        return;
      }
      if (base::notRunning(ps->state)) {
        entry_.process_state = ps->state;
        entry_.process_wchan = ps->wchan;
        entry_.liveness = Liveness::kNotRunning;
        return;
      }
    }
  }
  entry_.liveness = gone_ ? goneLiveness(entry_.last_dump_ns) : Liveness::kAlive;
}

void BboxWatch::readThreads() {
  const BboxHeader* h = header();
  if (h->thread_capacity == 0) return;
  const uint32_t seq = loadLive(h->threads_seq);
  // Unchanged, or being rewritten (read at the next refresh).
  if (seq == threads_seq_ || seq % 2 != 0) return;
  format::ThreadSnapshot snap;
  if (!format::readThreadSnapshot(*h, modules_, &snap)) return;
  threads_seq_ = seq;
  entry_.threads = makeThreadsView(entry_.pid, snap.taken_ns, snap.reason, std::move(snap.threads));
}

void BboxWatch::readLinks(int64_t now_ns) {
  const BboxHeader* h = header();
  // A table of 1024 records is 96 KiB: scanned only while the rank waits, at each refresh.
  const bool waits = std::any_of(ops_.begin(), ops_.end(), [&](const OpView& op) {
    return op.incomplete() && op.enqueue_ns > 0 &&
           now_ns - op.enqueue_ns >= analyzer::kTransportStallNs;
  });
  if (!waits || h->link_capacity == 0 || loadLive(h->link_count) == 0) {
    entry_.links.reset();
    return;
  }
  std::vector<format::Comm> comms(comms_.size());
  for (size_t k = 0; k < comms_.size(); ++k) {
    comms[k].index = comm_slots_[k];
    comms[k].comm_id = comms_[k].comm_id;
  }
  std::vector<format::Link> links = format::readLinks(*h, comms);
  if (entry_.links == nullptr || *entry_.links != links)
    entry_.links = std::make_shared<const std::vector<format::Link>>(std::move(links));
}

bool BboxWatch::readNewEvents(uint64_t write_index, std::vector<uint32_t>* stack_ids) {
  const BboxHeader* h = header();
  bool changed = false;
  auto insert = [&](const OpView& op) {
    // Retried slots land among newer ones: keep the deque sorted by index.
    auto it = std::upper_bound(ops_.begin(), ops_.end(), op.index,
                               [](uint64_t i, const OpView& o) { return i < o.index; });
    ops_.insert(it, op);
    while (ops_.size() > kRecentOps) ops_.pop_front();
    if (op.stack_id != kNoStackId) stack_ids->push_back(op.stack_id);
    changed = true;
  };
  std::vector<uint64_t> still_writing;
  for (uint64_t index : retry_) {
    format::Event e;
    if (format::readEvent(h, index, &e)) {
      insert(toOp(e, index));
    } else if (index + h->ring_capacity > write_index &&
               (ops_.empty() || index > ops_.front().index)) {
      still_writing.push_back(index);  // a writer preempted mid-event, or one that died there
    }
  }
  retry_ = std::move(still_writing);
  if (write_index < next_index_) next_index_ = write_index;  // never expected; keeps us bounded
  const uint64_t reach = std::min<uint64_t>(h->ring_capacity, kRecentOps);
  uint64_t from = std::max(next_index_, write_index > reach ? write_index - reach : 0);
  for (uint64_t i = from; i < write_index; ++i) {
    format::Event e;
    if (format::readEvent(h, i, &e)) {
      insert(toOp(e, i));
    } else if (retry_.size() < 8) {
      retry_.push_back(i);
    }
  }
  next_index_ = write_index;
  return changed;
}

bool BboxWatch::updateIncomplete() {
  bool changed = false;
  for (OpView& op : ops_) {
    if (!op.incomplete()) continue;
    format::Event e;
    if (!format::readEvent(header(), op.index, &e)) continue;  // overwritten: keep what we saw
    OpView now = toOp(e, op.index);
    if (now.state != op.state || now.end_ns != op.end_ns || now.start_ns != op.start_ns ||
        now.result != op.result) {
      op = now;
      changed = true;
    }
  }
  return changed;
}

bool BboxWatch::readComms() {
  const BboxHeader* h = header();
  const format::CommRecord* records = format::commRecords(h);
  bool changed = false;
  for (size_t k = 0; k < comms_.size(); ++k) {
    const format::CommRecord& r = records[comm_slots_[k]];
    const uint32_t state = loadLive(r.state);
    const uint64_t seq = loadLive(r.coll_seq);
    const int64_t ended = loadLive(r.ended_ns);
    CommView& c = comms_[k];
    if (state != c.state || seq != c.coll_seq || ended != c.ended_ns) {
      // A creation that returned wrote its outcome (a split child's rank and size) before the
      // state bit the load above saw.
      if (state != c.state) {
        c.rank = r.rank;
        c.nranks = r.nranks;
      }
      c.state = state;
      c.coll_seq = seq;
      c.ended_ns = ended;
      changed = true;
    }
  }
  const uint32_t count = std::min(loadLive(h->comm_count), h->comm_capacity);
  while (comms_read_ < count) {
    const format::CommRecord& r = records[comms_read_];
    if (loadLive(r.valid) != format::kValidMark) break;  // claimed, not published yet
    CommView c;
    c.comm_id = r.comm_id;
    c.rank = r.rank;
    c.nranks = r.nranks;
    c.state = loadLive(r.state);
    c.coll_seq = loadLive(r.coll_seq);
    c.ended_ns = loadLive(r.ended_ns);
    c.name = boundedString(r.name, sizeof(r.name));
    comms_.push_back(std::move(c));
    comm_slots_.push_back(comms_read_);
    ++comms_read_;
    changed = true;
  }
  return changed;
}

bool BboxWatch::readModules() {
  const BboxHeader* h = header();
  const uint32_t count = std::min(loadLive(h->module_count), h->module_capacity);
  bool changed = false;
  while (modules_read_ < count) {
    const format::ModuleRecord& r = format::moduleRecords(h)[modules_read_];
    if (loadLive(r.valid) != format::kValidMark) break;
    format::Module m;
    m.path = boundedString(r.path, sizeof(r.path));
    m.base = r.base;
    m.size = r.size;
    modules_.push_back(std::move(m));
    ++modules_read_;
    changed = true;
  }
  return changed;
}

bool BboxWatch::internStacks(const std::vector<uint32_t>& ids) {
  const BboxHeader* h = header();
  std::shared_ptr<StackMap> added;
  for (const uint32_t id : ids) {
    if (id >= h->stack_capacity || stacks_->contains(id)) continue;
    if (added != nullptr && added->contains(id)) continue;
    const format::StackRecord* r = format::stackRecord(h, id);
    if (loadLive(r->valid) != format::kValidMark) continue;
    format::Stack s;
    s.id = id;
    const uint32_t depth = std::min(r->depth, h->stack_depth);
    const auto* frames = reinterpret_cast<const uint64_t*>(reinterpret_cast<const uint8_t*>(r) +
                                                           offsetof(format::StackRecord, frames));
    for (uint32_t f = 0; f < depth; ++f) {
      if (format::isPythonFrameWord(frames[f])) {
        s.frames.push_back(format::pythonFrameOf(*h, frames[f]));
        continue;
      }
      format::Frame frame;
      frame.address = frames[f];
      for (const format::Module& m : modules_) {
        if (frame.address >= m.base && frame.address - m.base < m.size) {
          frame.module = m.path;
          frame.module_offset = frame.address - m.base;
          break;
        }
      }
      s.frames.push_back(std::move(frame));
    }
    if (added == nullptr) added = std::make_shared<StackMap>(*stacks_);
    added->emplace(id, std::move(s));
  }
  if (added == nullptr) return false;
  stacks_ = std::move(added);
  return true;
}

}  // namespace ncclrec::live
