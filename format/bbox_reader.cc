// parseBlackBox / loadBlackBox (reader.h). The image may belong to a running process (fields
// marked live in bbox_layout.h change under us: they are loaded atomically) or be any bytes at
// all (a foreign or truncated file): nothing is dereferenced before its extent is checked.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "format/bbox_event.h"
#include "format/bbox_layout.h"
#include "format/bbox_ring.h"
#include "format/links.h"
#include "format/prefault.h"
#include "format/python_lines.h"
#include "format/reader.h"
#include "format/root_address.h"

namespace ncclrec::format {
namespace {

template <class T>
T loadLive(const T& field) {
  return atomicField(const_cast<T&>(field)).load(std::memory_order_acquire);
}

std::string boundedString(const char* chars, size_t capacity) {
  return std::string(chars, strnlen(chars, capacity));
}

std::string hexString(const uint8_t* bytes, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 15]);
  }
  return out;
}

// "GPU-" and the 16 bytes as 8-4-4-4-12 hex digits, as nvidia-smi -L prints them; "" when all
// zero (unknown).
std::string formatDeviceUuid(const uint8_t (&uuid)[16]) {
  if (std::all_of(std::begin(uuid), std::end(uuid), [](uint8_t b) { return b == 0; })) return "";
  const std::string hex = hexString(uuid, sizeof(uuid));
  return "GPU-" + hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20);
}

base::Status fail(const std::string& path, const std::string& why) {
  return base::Status::error(path + ": " + why);
}

// True when [offset, offset + count * bytes) lies inside [0, size); no overflow for any input.
bool regionFits(uint64_t offset, uint64_t count, uint64_t bytes, uint64_t size) {
  if (offset > size) return false;
  if (bytes != 0 && count > (size - offset) / bytes) return false;
  return true;
}

}  // namespace

base::Status checkBlackBoxHeader(const BboxHeader& h, size_t size, const std::string& path) {
  if (h.version == 0) return fail(path, "corrupt black box (version 0)");
  if (h.version > kBboxVersion) {
    return fail(path, "black box version " + std::to_string(h.version) +
                          " is newer than this build reads (" + std::to_string(kBboxVersion) + ")");
  }
  if (h.header_bytes < sizeof(BboxHeader) || h.event_bytes != sizeof(Event) ||
      h.comm_bytes != sizeof(CommRecord) || h.module_bytes != sizeof(ModuleRecord) ||
      h.stack_depth > kMaxStackDepth || h.stack_bytes != stackRecordBytes(h.stack_depth)) {
    return fail(path, "corrupt black box header (record sizes do not match version " +
                          std::to_string(h.version) + ")");
  }
  if (h.ring_capacity == 0 || (h.ring_capacity & (h.ring_capacity - 1)) != 0) {
    return fail(path, "corrupt black box header (ring capacity " + std::to_string(h.ring_capacity) +
                          " is not a power of two)");
  }
  if (h.file_bytes > size) {
    return fail(path, "truncated black box (" + std::to_string(size) + " bytes, header says " +
                          std::to_string(h.file_bytes) + ")");
  }
  // Records are read through aligned atomics: offsets must keep them aligned.
  if (h.ring_offset % alignof(Event) != 0 || h.comm_offset % 8 != 0 || h.stack_offset % 8 != 0 ||
      h.module_offset % 8 != 0 || h.ring_offset < h.header_bytes) {
    return fail(path, "corrupt black box header (misaligned table offsets)");
  }
  if (!regionFits(h.ring_offset, h.ring_capacity, h.event_bytes, size) ||
      !regionFits(h.comm_offset, h.comm_capacity, h.comm_bytes, size) ||
      !regionFits(h.stack_offset, h.stack_capacity, h.stack_bytes, size) ||
      !regionFits(h.module_offset, h.module_capacity, h.module_bytes, size)) {
    return fail(path, "truncated black box (tables extend past the " + std::to_string(size) +
                          " bytes of the file)");
  }
  if (h.thread_capacity > 0 &&
      (h.thread_bytes != sizeof(ThreadRecord) || h.threads_offset % 8 != 0 ||
       !regionFits(h.threads_offset, h.thread_capacity, h.thread_bytes, size))) {
    return fail(path, "corrupt black box header (thread snapshot region)");
  }
  if (h.link_capacity > 0 && (h.link_bytes != sizeof(LinkRecord) || h.links_offset % 8 != 0 ||
                              !regionFits(h.links_offset, h.link_capacity, h.link_bytes, size))) {
    return fail(path, "corrupt black box header (link table)");
  }
  if (h.pycode_capacity > 0) {
    if (h.pycode_bytes != sizeof(PyCodeRecord) || h.pycode_offset % 8 != 0) {
      return fail(path, "corrupt black box header (Python code records)");
    }
    if (!regionFits(h.pycode_offset, h.pycode_capacity, h.pycode_bytes, size) ||
        !regionFits(h.pyblob_offset, 1, h.pyblob_bytes, size)) {
      return fail(path, "truncated black box (Python tables extend past the " +
                            std::to_string(size) + " bytes of the file)");
    }
  }
  return base::okStatus();
}

EventFields eventFieldsOf(const Event& e, uint64_t index) {
  EventFields r;
  r.index = index;
  r.op = static_cast<OpType>(e.op);
  r.state = static_cast<EventState>(e.state);
  r.comm_id = e.comm_id;
  r.comm_index = e.comm_index;
  r.op_seq = e.op_seq;
  r.count = e.count;
  r.stream = e.stream;
  r.rank = e.rank;
  r.nranks = e.nranks;
  r.peer = e.peer;
  r.device = e.device;
  r.redop = e.redop;
  r.dtype = e.dtype == 0xff ? -1 : e.dtype;
  r.tid = e.tid;
  r.group_depth = e.group_depth;
  r.result = e.result;
  r.flags = e.flags;
  r.stack_id = e.stack_id;
  r.enqueue_ns = e.enqueue_ns;
  r.start_ns = e.start_ns;
  r.end_ns = e.end_ns;
  return r;
}

namespace {

EventRecord toRecord(const Event& e, uint64_t index) {
  return EventRecord(eventFieldsOf(e, index));
}

void readEvents(const BboxHeader* h, uint64_t write_index, RankData* out) {
  const uint64_t first = write_index > h->ring_capacity ? write_index - h->ring_capacity : 0;
  out->events_total = write_index;
  out->events_lost = first;
  reserveAndPrefault(&out->events, write_index - first);
  for (uint64_t i = first; i < write_index; ++i) {
    Event e;
    if (readEvent(h, i, &e)) {
      out->events.push_back(toRecord(e, i));
      if (e.aux != 0 || e.aux2 != 0 || e.aux64 != 0) {
        out->event_aux.push_back(EventAux{i, e.aux, e.aux2, e.aux64});
      }
    } else {
      ++out->events_lost;
    }
  }
}

void readComms(const BboxHeader* h, uint32_t count, RankData* out) {
  const CommRecord* records = commRecords(h);
  for (uint32_t i = 0; i < std::min(count, h->comm_capacity); ++i) {
    const CommRecord& c = records[i];
    if (loadLive(c.valid) != kValidMark) continue;
    // State first: once it says the creating call returned, the outcome fields are whole.
    const uint32_t state = loadLive(c.state);
    Comm m;
    m.index = i;
    m.comm_id = c.comm_id;
    m.parent_id = c.parent_id;
    m.handle = c.handle;
    m.rank = c.rank;
    m.nranks = c.nranks;
    m.device = c.device;
    m.global_rank = c.global_rank;
    m.color = c.color;
    m.key = c.key;
    m.created_by = static_cast<OpType>(c.created_by);
    m.init_result = c.init_result;
    m.state = state;
    m.coll_seq = loadLive(c.coll_seq);
    m.created_ns = c.created_ns;
    m.ended_ns = loadLive(c.ended_ns);
    m.name = boundedString(c.name, sizeof(c.name));
    m.bus_id = boundedString(c.bus_id, sizeof(c.bus_id));
    m.uuid = formatDeviceUuid(c.uuid);
    m.device_source = c.device_source;
    m.root = formatRootAddress(c.root_family, c.root_port, c.root_addr);
    m.blocking = c.blocking;
    out->comms.push_back(std::move(m));
  }
}

void readModules(const BboxHeader* h, uint32_t count, RankData* out) {
  const ModuleRecord* records = moduleRecords(h);
  for (uint32_t i = 0; i < std::min(count, h->module_capacity); ++i) {
    const ModuleRecord& r = records[i];
    if (loadLive(r.valid) != kValidMark) continue;
    Module m;
    m.path = boundedString(r.path, sizeof(r.path));
    m.base = r.base;
    m.size = r.size;
    m.build_id = hexString(r.build_id, std::min<size_t>(r.build_id_len, sizeof(r.build_id)));
    out->modules.push_back(std::move(m));
  }
}

const Module* moduleFor(const std::vector<Module>& modules, uint64_t address) {
  for (const Module& m : modules) {
    if (address >= m.base && address - m.base < m.size) return &m;
  }
  return nullptr;
}

// Stack ids are slots of an open-addressing table (recorder/stacks.h), spread over the whole
// capacity: every slot is looked at, and the published ones are taken.
void readStacks(const BboxHeader* h, RankData* out) {
  for (uint32_t i = 0; i < h->stack_capacity; ++i) {
    const StackRecord* r = stackRecord(h, i);
    if (loadLive(r->valid) != kValidMark) continue;
    Stack s;
    s.id = i;
    const uint32_t depth = std::min(r->depth, h->stack_depth);
    // frames[] is a flexible tail: index through the record's bytes, which checkHeader bounded.
    const auto* frames = reinterpret_cast<const uint64_t*>(reinterpret_cast<const uint8_t*>(r) +
                                                           offsetof(StackRecord, frames));
    for (uint32_t f = 0; f < depth; ++f) {
      if (isPythonFrameWord(frames[f])) {
        s.frames.push_back(pythonFrameOf(*h, frames[f]));
        continue;
      }
      Frame frame;
      frame.address = frames[f];
      if (const Module* m = moduleFor(out->modules, frame.address)) {
        frame.module = m->path;
        frame.module_offset = frame.address - m->base;
      }
      s.frames.push_back(std::move(frame));
    }
    out->stacks.emplace(i, std::move(s));
  }
}

Frame nativeFrame(uint64_t address, const std::vector<Module>& modules) {
  Frame frame;
  frame.address = address;
  if (const Module* m = moduleFor(modules, address)) {
    frame.module = m->path;
    frame.module_offset = address - m->base;
  }
  return frame;
}

void readThreads(const BboxHeader* h, RankData* out) {
  ThreadSnapshot snap;
  if (!readThreadSnapshot(*h, out->modules, &snap)) return;
  out->threads = std::move(snap.threads);
  out->threads_ns = snap.taken_ns;
  out->threads_reason = snap.reason;
  out->threads_dumper_tid = snap.dumper_tid;
}

// A blob slice of a code record, or "" when it does not lie inside the blob.
std::string_view blobSlice(const BboxHeader& h, uint64_t offset, uint32_t length) {
  if (offset > h.pyblob_bytes || length > h.pyblob_bytes - offset) return {};
  return {reinterpret_cast<const char*>(pyBlob(&h)) + offset, length};
}

struct AlignedFree {
  void operator()(void* p) const { ::operator delete (p, std::align_val_t{alignof(Event)}); }
};

base::StatusOr<RankData> parseOrThrow(const void* data, size_t size, std::string source_path) {
  if (size < sizeof(kBboxMagic) || std::memcmp(data, kBboxMagic, sizeof(kBboxMagic)) != 0) {
    return fail(source_path, "not an ncclrec black box (bad magic)");
  }
  if (size < sizeof(BboxHeader)) {
    return fail(source_path, "truncated black box (" + std::to_string(size) +
                                 " bytes, the header alone takes " +
                                 std::to_string(sizeof(BboxHeader)) + ")");
  }
  // Slots are read through atomics and Event is 64-byte aligned: work on an aligned copy when the
  // caller's buffer is not (a mapping always is).
  std::unique_ptr<void, AlignedFree> copy;
  if (reinterpret_cast<uintptr_t>(data) % alignof(Event) != 0) {
    copy.reset(::operator new (size, std::align_val_t{alignof(Event)}));
    std::memcpy(copy.get(), data, size);
    data = copy.get();
  }
  const auto* h = static_cast<const BboxHeader*>(data);
  NCCLREC_RETURN_IF_ERROR(checkBlackBoxHeader(*h, size, source_path));

  RankData out;
  out.source_path = std::move(source_path);
  out.source = SourceKind::kBlackBox;
  out.format_version = h->version;
  out.pid = h->pid;
  out.global_rank = loadLive(h->global_rank);
  out.world_size = loadLive(h->world_size);
  out.local_rank = h->local_rank;
  out.host = boundedString(h->host, sizeof(h->host));
  out.run_id = boundedString(h->run_id, sizeof(h->run_id));
  out.exe = boundedString(h->exe, sizeof(h->exe));
  out.net_env = boundedString(h->net_env, sizeof(h->net_env));
  out.start_ns = h->start_realtime_ns;
  out.heartbeat_ns = loadLive(h->heartbeat_ns);
  out.exited = loadLive(h->exited) != 0;
  out.exit_ns = loadLive(h->exit_ns);
  out.fatal_signal = loadLive(h->fatal_signal);
  out.fatal_ns = loadLive(h->fatal_ns);
  out.cuda_completion = h->completion_mode == 1;
  out.hang_event_index = loadLive(h->hang_event_index);
  out.stacks_dropped = loadLive(h->stacks_dropped);

  // Tables are read after the counters that bound them; records claimed later are not valid yet.
  readEvents(h, loadLive(h->write_index), &out);
  readComms(h, loadLive(h->comm_count), &out);
  readModules(h, loadLive(h->module_count), &out);
  readStacks(h, &out);
  readThreads(h, &out);
  out.links = readLinks(*h, out.comms);
  out.links_dropped = loadLive(h->links_dropped);
  return out;
}

}  // namespace

// The thread region under its sequence word: a copy taken while the recorder rewrote it is
// retried, and given up after a few tries.
__attribute__((no_sanitize("thread"))) bool readThreadSnapshot(const BboxHeader& header,
                                                               const std::vector<Module>& modules,
                                                               ThreadSnapshot* out) {
  const BboxHeader* h = &header;
  if (h->thread_capacity == 0 || h->thread_bytes != sizeof(ThreadRecord)) return false;
  std::vector<ThreadRecord> records;
  for (int attempt = 0; attempt < 8; ++attempt) {
    const uint32_t before = loadLive(h->threads_seq);
    if (before % 2 != 0) continue;
    const uint32_t count = std::min(loadLive(h->thread_count), h->thread_capacity);
    records.assign(threadRecords(h), threadRecords(h) + count);
    const int64_t taken_ns = loadLive(h->threads_ns);
    const uint32_t reason = loadLive(h->threads_reason);
    const int32_t dumper_tid = loadLive(h->threads_dumper_tid);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (loadLive(h->threads_seq) != before) continue;
    if (taken_ns == 0) return false;
    ThreadSnapshot snap;
    snap.taken_ns = taken_ns;
    snap.reason = static_cast<DumpReason>(reason);
    snap.dumper_tid = dumper_tid;
    for (const ThreadRecord& r : records) {
      ThreadState t;
      t.tid = r.tid;
      t.name = boundedString(r.comm, sizeof(r.comm));
      t.status = r.status;
      t.flags = r.flags;
      t.kernel_state = r.kernel_state;
      t.wchan = boundedString(r.wchan, sizeof(r.wchan));
      if (t.wchan == "0") t.wchan.clear();
      t.cpu_ticks = r.cpu_ticks;
      const uint32_t depth = std::min(r.python_depth + r.native_depth, kThreadMaxFrames);
      for (uint32_t f = 0; f < depth; ++f) {
        t.frames.push_back(isPythonFrameWord(r.frames[f]) ? pythonFrameOf(*h, r.frames[f])
                                                          : nativeFrame(r.frames[f], modules));
      }
      snap.threads.push_back(std::move(t));
    }
    *out = std::move(snap);
    return true;
  }
  return false;
}

Frame pythonFrameOf(const BboxHeader& h, uint64_t word) {
  Frame frame;
  frame.python = true;
  frame.function = "<unknown>";
  const uint32_t index = pythonCodeIndex(word);
  if (h.pycode_capacity == 0 || index >= h.pycode_capacity) return frame;
  const PyCodeRecord& r = pyCodeRecords(&h)[index];
  if (loadLive(r.valid) != kValidMark) return frame;
  frame.function = std::string(blobSlice(h, r.qualname_off, r.qualname_len));
  if (frame.function.empty()) frame.function = "<unknown>";
  frame.file = std::string(blobSlice(h, r.filename_off, r.filename_len));
  const std::string_view table = blobSlice(h, r.linetable_off, r.linetable_len);
  const uint32_t offset = pythonOffset(word);
  frame.line =
      pythonLine(r.line_format, reinterpret_cast<const uint8_t*>(table.data()), table.size(),
                 r.first_line, offset == kPyNoOffset ? int64_t{-1} : int64_t{offset});
  return frame;
}

base::StatusOr<RankData> parseBlackBox(const void* data, size_t size, std::string source_path) {
  // The dump writer calls this inside the recorded process: allocation failure is a Status too.
  try {
    return parseOrThrow(data, size, source_path);
  } catch (const std::bad_alloc&) {
    return fail(source_path, "out of memory reading the black box");
  }
}

base::StatusOr<RankData> loadBlackBox(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return fail(path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(path, "not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return fail(path, "empty file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  const int map_err = errno;
  ::close(fd);
  if (map == MAP_FAILED) return fail(path, std::string("mmap: ") + std::strerror(map_err));
  base::StatusOr<RankData> result = parseBlackBox(map, size, path);
  ::munmap(map, size);
  return result;
}

}  // namespace ncclrec::format
