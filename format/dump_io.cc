#include "format/dump_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <string>

#include "format/event_wire.h"
#include "format/prefault.h"

namespace ncclrec::format {
namespace {

// The proto enums carry op_type.h's numbers, so conversion is a cast.
static_assert(static_cast<int>(pb::OP_RED_OP_DESTROY) == static_cast<int>(OpType::kRedOpDestroy));
static_assert(static_cast<int>(pb::OP_COMM_SPLIT) == static_cast<int>(OpType::kCommSplit));
static_assert(static_cast<int>(pb::OP_SEND) == static_cast<int>(OpType::kSend));
static_assert(pb::OpType_ARRAYSIZE == static_cast<int>(OpType::kCount));
static_assert(static_cast<int>(pb::STATE_FAILED) == static_cast<int>(EventState::kFailed));
static_assert(static_cast<int>(pb::DUMP_REASON_MANUAL) == static_cast<int>(DumpReason::kManual));
static_assert(static_cast<int>(pb::DUMP_REASON_SNAPSHOT) ==
              static_cast<int>(DumpReason::kSnapshot));

void toProto(const EventRecord& e, const EventAux* aux, pb::Event* p) {
  p->set_index(e.index);
  p->set_op(static_cast<pb::OpType>(e.op));
  p->set_state(static_cast<pb::EventState>(e.state));
  p->set_comm_id(e.commId());
  p->set_comm_index(e.commIndex());
  p->set_op_seq(e.op_seq);
  p->set_count(e.count);
  p->set_stream(e.stream());
  p->set_rank(e.rank());
  p->set_nranks(e.nranks());
  p->set_peer(e.peer());
  p->set_device(e.device());
  p->set_redop(e.redop);
  p->set_dtype(e.dtype);
  p->set_tid(e.tid());
  p->set_group_depth(static_cast<uint32_t>(e.group_depth));
  p->set_result(e.result);
  p->set_flags(e.flags);
  if (aux != nullptr) {
    p->set_aux(aux->aux);
    p->set_aux2(aux->aux2);
    p->set_aux64(aux->aux64);
  }
  p->set_stack_id(e.stackId());
  p->set_enqueue_ns(e.enqueueNs());
  p->set_start_ns(e.startNs());
  p->set_end_ns(e.endNs());
}

// The same conversion as the fast path's (event_wire.h), through the same fields.
WireEvent wireFields(const pb::Event& p) {
  WireEvent w;
  w.index_ = p.index();
  w.op_ = p.op();
  w.state_ = p.state();
  w.comm_id_ = p.comm_id();
  w.comm_index_ = p.comm_index();
  w.op_seq_ = p.op_seq();
  w.count_ = p.count();
  w.stream_ = p.stream();
  w.rank_ = p.rank();
  w.nranks_ = p.nranks();
  w.peer_ = p.peer();
  w.device_ = p.device();
  w.redop_ = p.redop();
  w.dtype_ = p.dtype();
  w.tid_ = p.tid();
  w.group_depth_ = p.group_depth();
  w.result_ = p.result();
  w.flags_ = p.flags();
  w.aux_ = p.aux();
  w.aux2_ = p.aux2();
  w.aux64_ = p.aux64();
  w.stack_id_ = p.stack_id();
  w.enqueue_ns_ = p.enqueue_ns();
  w.start_ns_ = p.start_ns();
  w.end_ns_ = p.end_ns();
  return w;
}

void toProto(const Comm& c, pb::Comm* p) {
  p->set_index(c.index);
  p->set_comm_id(c.comm_id);
  p->set_parent_id(c.parent_id);
  p->set_handle(c.handle);
  p->set_rank(c.rank);
  p->set_nranks(c.nranks);
  p->set_device(c.device);
  p->set_global_rank(c.global_rank);
  p->set_color(c.color);
  p->set_key(c.key);
  p->set_created_by(static_cast<pb::OpType>(c.created_by));
  p->set_init_result(c.init_result);
  p->set_state(c.state);
  p->set_coll_seq(c.coll_seq);
  p->set_created_ns(c.created_ns);
  p->set_ended_ns(c.ended_ns);
  p->set_name(c.name);
  p->set_bus_id(c.bus_id);
  p->set_uuid(c.uuid);
  p->set_device_source(c.device_source);
  p->set_root(c.root);
  p->set_blocking(c.blocking);
}

Comm fromProto(const pb::Comm& p) {
  Comm c;
  c.index = p.index();
  c.comm_id = p.comm_id();
  c.parent_id = p.parent_id();
  c.handle = p.handle();
  c.rank = p.rank();
  c.nranks = p.nranks();
  c.device = p.device();
  c.global_rank = p.global_rank();
  c.color = p.color();
  c.key = p.key();
  c.created_by = static_cast<OpType>(p.created_by());
  c.init_result = p.init_result();
  c.state = p.state();
  c.coll_seq = p.coll_seq();
  c.created_ns = p.created_ns();
  c.ended_ns = p.ended_ns();
  c.name = p.name();
  c.bus_id = p.bus_id();
  c.uuid = p.uuid();
  c.device_source = p.device_source();
  c.root = p.root();
  // Dumps older than minor 4 have no blocking field: proto3 reads 0, which would claim a
  // nonblocking config.
  c.blocking = p.has_blocking() ? p.blocking() : -1;
  return c;
}

void toProto(const Frame& f, pb::Frame* pf) {
  pf->set_address(f.address);
  pf->set_module(f.module);
  pf->set_module_offset(f.module_offset);
  pf->set_function(f.function);
  pf->set_file(f.file);
  pf->set_line(f.line);
  pf->set_python(f.python);
}

Frame fromProto(const pb::Frame& pf) {
  Frame f;
  f.address = pf.address();
  f.module = pf.module();
  f.module_offset = pf.module_offset();
  f.function = pf.function();
  f.file = pf.file();
  f.line = pf.line();
  f.python = pf.python();
  return f;
}

void toProto(const Stack& s, pb::Stack* p) {
  p->set_id(s.id);
  p->set_symbolized(s.symbolized);
  for (const Frame& f : s.frames) toProto(f, p->add_frames());
}

Stack fromProto(const pb::Stack& p) {
  Stack s;
  s.id = p.id();
  s.symbolized = p.symbolized();
  s.frames.reserve(p.frames_size());
  for (const pb::Frame& pf : p.frames()) s.frames.push_back(fromProto(pf));
  return s;
}

void toProto(const ThreadState& t, pb::Thread* p) {
  p->set_tid(t.tid);
  p->set_name(t.name);
  p->set_status(t.status);
  p->set_flags(t.flags);
  if (t.kernel_state != 0) p->set_kernel_state(std::string(1, t.kernel_state));
  p->set_wchan(t.wchan);
  p->set_cpu_ticks(t.cpu_ticks);
  p->set_symbolized(t.symbolized);
  for (const Frame& f : t.frames) toProto(f, p->add_frames());
}

ThreadState fromProto(const pb::Thread& p) {
  ThreadState t;
  t.tid = p.tid();
  t.name = p.name();
  t.status = p.status();
  t.flags = p.flags();
  t.kernel_state = p.kernel_state().empty() ? 0 : p.kernel_state()[0];
  t.wchan = p.wchan();
  t.cpu_ticks = p.cpu_ticks();
  t.symbolized = p.symbolized();
  for (const pb::Frame& pf : p.frames()) t.frames.push_back(fromProto(pf));
  return t;
}

base::Status writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return base::Status::error(std::strerror(errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return base::okStatus();
}

base::Status writeFramed(const std::string& bytes, const std::string& tmp,
                         const std::string& path) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return base::Status::error(path + ": cannot create " + tmp + ": " + std::strerror(errno));
  base::Status st = writeAll(fd, kDumpFileMagic, sizeof(kDumpFileMagic));
  if (st.ok()) st = writeAll(fd, bytes.data(), bytes.size());
  if (st.ok() && ::fchmod(fd, 0600) != 0) st = base::Status::error(std::strerror(errno));
  if (st.ok() && ::fsync(fd) != 0) st = base::Status::error(std::strerror(errno));
  if (::close(fd) != 0 && st.ok()) st = base::Status::error(std::strerror(errno));
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return base::Status::error(path + ": cannot write " + tmp + ": " + st.message());
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return base::Status::error(path + ": cannot rename " + tmp + ": " + std::strerror(err));
  }
  return base::okStatus();
}

void toProto(const Link& l, pb::Link* p) {
  p->set_comm_id(l.comm_id);
  p->set_comm_index(l.comm_index);
  p->set_peer(l.peer);
  p->set_channel(static_cast<uint32_t>(l.channel));
  p->set_is_send(l.is_send);
  p->set_op_index(l.op_index);
  p->set_op_steps(l.op_steps);
  p->set_op_base(l.op_base);
  p->set_planned(l.planned);
  p->set_posted(l.posted);
  p->set_moved(l.moved);
  p->set_done(l.done);
  p->set_op_start_ns(l.op_start_ns);
  p->set_posted_ns(l.posted_ns);
  p->set_moved_ns(l.moved_ns);
  p->set_done_ns(l.done_ns);
}

Link fromProto(const pb::Link& p) {
  Link l;
  l.comm_id = p.comm_id();
  l.comm_index = p.comm_index();
  l.peer = p.peer();
  l.channel = static_cast<int>(p.channel());
  l.is_send = p.is_send();
  l.op_index = p.op_index();
  l.op_steps = p.op_steps();
  l.op_base = p.op_base();
  l.planned = p.planned();
  l.posted = p.posted();
  l.moved = p.moved();
  l.done = p.done();
  l.op_start_ns = p.op_start_ns();
  l.posted_ns = p.posted_ns();
  l.moved_ns = p.moved_ns();
  l.done_ns = p.done_ns();
  return l;
}

}  // namespace

pb::Dump toProto(const RankData& d) {
  pb::Dump p;
  p.set_magic(std::string(kDumpMessageMagic));
  p.set_format_major(kDumpFormatMajor);
  p.set_format_minor(kDumpFormatMinor);
  p.set_pid(d.pid);
  p.set_global_rank(d.global_rank);
  p.set_world_size(d.world_size);
  p.set_local_rank(d.local_rank);
  p.set_host(d.host);
  p.set_run_id(d.run_id);
  p.set_exe(d.exe);
  p.set_net_env(d.net_env);
  p.set_start_ns(d.start_ns);
  p.set_heartbeat_ns(d.heartbeat_ns);
  p.set_exited(d.exited);
  p.set_exit_ns(d.exit_ns);
  p.set_fatal_signal(d.fatal_signal);
  p.set_fatal_ns(d.fatal_ns);
  p.set_cuda_completion(d.cuda_completion);
  p.set_hang_event_index(d.hang_event_index);
  p.set_dump_reason(static_cast<pb::DumpReason>(d.dump_reason));
  p.set_dump_ns(d.dump_ns);
  p.set_dump_detail(d.dump_detail);
  p.set_events_total(d.events_total);
  p.set_events_lost(d.events_lost);
  p.set_stacks_dropped(d.stacks_dropped);
  p.mutable_events()->Reserve(static_cast<int>(d.events.size()));
  auto aux = d.event_aux.begin();  // both ascending by index
  for (const EventRecord& e : d.events) {
    while (aux != d.event_aux.end() && aux->index < e.index) ++aux;
    const bool has_aux = aux != d.event_aux.end() && aux->index == e.index;
    toProto(e, has_aux ? &*aux : nullptr, p.add_events());
  }
  for (const Comm& c : d.comms) toProto(c, p.add_comms());
  for (const auto& [id, s] : d.stacks) toProto(s, p.add_stacks());
  for (const Module& m : d.modules) {
    pb::Module* pm = p.add_modules();
    pm->set_path(m.path);
    pm->set_base(m.base);
    pm->set_size(m.size);
    pm->set_build_id(m.build_id);
  }
  for (const ThreadState& t : d.threads) toProto(t, p.add_threads());
  p.set_threads_ns(d.threads_ns);
  p.set_threads_reason(static_cast<pb::DumpReason>(d.threads_reason));
  p.set_threads_dumper_tid(d.threads_dumper_tid);
  for (const Link& l : d.links) toProto(l, p.add_links());
  p.set_links_dropped(d.links_dropped);
  return p;
}

RankData fromProto(const pb::Dump& p) {
  RankData d;
  d.source = SourceKind::kDump;
  d.format_version = p.format_major();
  d.pid = p.pid();
  d.global_rank = p.global_rank();
  d.world_size = p.world_size();
  d.local_rank = p.local_rank();
  d.host = p.host();
  d.run_id = p.run_id();
  d.exe = p.exe();
  d.net_env = p.net_env();
  d.start_ns = p.start_ns();
  d.heartbeat_ns = p.heartbeat_ns();
  d.exited = p.exited();
  d.exit_ns = p.exit_ns();
  d.fatal_signal = p.fatal_signal();
  d.fatal_ns = p.fatal_ns();
  d.cuda_completion = p.cuda_completion();
  d.hang_event_index = p.hang_event_index();
  d.dump_reason = static_cast<DumpReason>(p.dump_reason());
  d.dump_ns = p.dump_ns();
  d.dump_detail = p.dump_detail();
  d.events_total = p.events_total();
  d.events_lost = p.events_lost();
  d.stacks_dropped = p.stacks_dropped();
  reserveAndPrefault(&d.events, static_cast<size_t>(p.events_size()));
  for (const pb::Event& e : p.events()) {
    const WireEvent w = wireFields(e);
    d.events.push_back(eventFromFields(w));
    if (w.aux_ != 0 || w.aux2_ != 0 || w.aux64_ != 0) {
      d.event_aux.push_back(EventAux{w.index_, w.aux_, w.aux2_, w.aux64_});
    }
  }
  for (const pb::Comm& c : p.comms()) d.comms.push_back(fromProto(c));
  for (const pb::Stack& s : p.stacks()) d.stacks[s.id()] = fromProto(s);
  for (const pb::Module& pm : p.modules()) {
    d.modules.push_back(Module{pm.path(), pm.base(), pm.size(), pm.build_id()});
  }
  for (const pb::Thread& t : p.threads()) d.threads.push_back(fromProto(t));
  d.threads_ns = p.threads_ns();
  d.threads_reason = static_cast<DumpReason>(p.threads_reason());
  d.threads_dumper_tid = p.threads_dumper_tid();
  for (const pb::Link& l : p.links()) d.links.push_back(fromProto(l));
  d.links_dropped = p.links_dropped();
  return d;
}

base::Status writeDumpFile(const RankData& data, const std::string& path) {
  // Callers include the recorder's dump thread inside the user's process: nothing may escape.
  try {
    std::string bytes;
    if (!toProto(data).SerializeToString(&bytes)) {
      return base::Status::error(path + ": cannot serialize the dump");
    }
    return writeFramed(bytes, path + ".tmp." + std::to_string(::getpid()), path);
  } catch (const std::exception& e) {
    return base::Status::error(path + ": cannot write the dump: " + e.what());
  } catch (...) {
    return base::Status::error(path + ": cannot write the dump");
  }
}

base::StatusOr<RankData> parseDump(const void* data, size_t size, const std::string& source_path) {
  const auto* bytes = static_cast<const char*>(data);
  if (size < sizeof(kDumpFileMagic) ||
      std::memcmp(bytes, kDumpFileMagic, kDumpMagicPrefixBytes) != 0) {
    return base::Status::error(source_path + ": not an ncclrec dump (bad magic)");
  }
  if (bytes[kDumpMagicPrefixBytes] != kDumpFileMagic[kDumpMagicPrefixBytes]) {
    return base::Status::error(
        source_path + ": dump framing version '" + std::string(1, bytes[kDumpMagicPrefixBytes]) +
        "' is not the one this build reads ('" +
        std::string(1, kDumpFileMagic[kDumpMagicPrefixBytes]) + "'); use a newer ncclrec");
  }
  pb::Dump dump;
  const size_t body = size - sizeof(kDumpFileMagic);
  const char* message = bytes + sizeof(kDumpFileMagic);
  // The events decoded directly (event_wire.h), the rest by protobuf; anything unexpected, and
  // the whole message goes through protobuf.
  std::vector<EventRecord> events;
  std::vector<EventAux> aux;
  std::string rest;
  const bool split = body <= static_cast<size_t>(INT32_MAX) &&
                     splitDumpEvents(message, body, &events, &aux, &rest) &&
                     dump.ParseFromString(rest);
  if (!split) {
    dump.Clear();
    events.clear();
    aux.clear();
    if (body > static_cast<size_t>(INT32_MAX) ||
        !dump.ParseFromArray(message, static_cast<int>(body))) {
      return base::Status::error(source_path + ": corrupt or truncated ncclrec dump");
    }
  }
  if (dump.magic() != kDumpMessageMagic) {
    return base::Status::error(source_path + ": not an ncclrec dump (bad magic)");
  }
  if (dump.format_major() > kDumpFormatMajor) {
    return base::Status::error(
        source_path + ": dump format version " + std::to_string(dump.format_major()) + "." +
        std::to_string(dump.format_minor()) + " is newer than this build reads (" +
        std::to_string(kDumpFormatMajor) + ".x); use a newer ncclrec");
  }
  if (dump.format_major() == 0) {
    return base::Status::error(source_path + ": corrupt ncclrec dump (format version 0)");
  }
  RankData d = fromProto(dump);
  if (split) {
    d.events = std::move(events);
    d.event_aux = std::move(aux);
  }
  d.source_path = source_path;
  return d;
}

}  // namespace ncclrec::format
