// splitDumpEvents (event_wire.h): protobuf's wire format, as documented at
// protobuf.dev/programming-guides/encoding: a key varint (field number << 3 | wire type), then a
// varint (type 0), 8 little-endian bytes (type 1), a length-prefixed payload (type 2) or 4 bytes
// (type 5).
#include "format/event_wire.h"

#include <cstring>

#include "format/prefault.h"

namespace ncclrec::format {
namespace {

constexpr uint32_t kDumpEventsField = 25;  // ncclrec.proto Dump.events
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  bool varint(uint64_t* v) {
    uint64_t out = 0;
    for (int shift = 0; shift < 64 && p < end; shift += 7) {
      const uint8_t b = *p++;
      out |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        *v = out;
        return true;
      }
    }
    return false;  // truncated, or longer than 10 bytes
  }
  bool fixed64(uint64_t* v) {
    if (end - p < 8) return false;
    std::memcpy(v, p, 8);  // little-endian hosts only (x86-64, aarch64)
    p += 8;
    return true;
  }
  // The payload of a length-delimited field.
  bool length(const uint8_t** begin, size_t* n) {
    uint64_t len = 0;
    if (!varint(&len) || len > static_cast<uint64_t>(end - p)) return false;
    *begin = p;
    *n = static_cast<size_t>(len);
    p += len;
    return true;
  }
  // Skips a field of an unknown number (protobuf keeps it as unknown; nothing here reads those).
  bool skip(uint32_t type) {
    uint64_t v = 0;
    const uint8_t* b = nullptr;
    size_t n = 0;
    switch (type) {
      case kVarint:
        return varint(&v);
      case kFixed64:
        return fixed64(&v);
      case kLength:
        return length(&b, &n);
      case kFixed32:
        if (end - p < 4) return false;
        p += 4;
        return true;
      default:
        return false;  // groups: not written by ncclrec
    }
  }
};

int32_t zigzag32(uint64_t v) {
  const auto u = static_cast<uint32_t>(v);
  return static_cast<int32_t>((u >> 1) ^ (~(u & 1) + 1));
}

// One Event message. Field numbers and types are ncclrec.proto's.
bool decodeEvent(const uint8_t* data, size_t size, WireEvent* e) {
  Cursor c{data, data + size};
  while (c.p < c.end) {
    uint64_t key = 0;
    if (!c.varint(&key)) return false;
    const auto field = static_cast<uint32_t>(key >> 3);
    const auto type = static_cast<uint32_t>(key & 7);
    const bool fixed = field == 4 || field == 8 || field == 21;
    if (field >= 1 && field <= 25 && type != (fixed ? kFixed64 : kVarint)) return false;
    uint64_t v = 0;
    if (field >= 1 && field <= 25 && !(fixed ? c.fixed64(&v) : c.varint(&v))) return false;
    const auto u32 = static_cast<uint32_t>(v);
    switch (field) {
      case 1:
        e->index_ = v;
        break;
      case 2:
        e->op_ = static_cast<int32_t>(u32);
        break;
      case 3:
        e->state_ = static_cast<int32_t>(u32);
        break;
      case 4:
        e->comm_id_ = v;
        break;
      case 5:
        e->comm_index_ = u32;
        break;
      case 6:
        e->op_seq_ = v;
        break;
      case 7:
        e->count_ = v;
        break;
      case 8:
        e->stream_ = v;
        break;
      case 9:
        e->rank_ = zigzag32(v);
        break;
      case 10:
        e->nranks_ = zigzag32(v);
        break;
      case 11:
        e->peer_ = zigzag32(v);
        break;
      case 12:
        e->device_ = zigzag32(v);
        break;
      case 13:
        e->redop_ = zigzag32(v);
        break;
      case 14:
        e->dtype_ = zigzag32(v);
        break;
      case 15:
        e->tid_ = u32;
        break;
      case 16:
        e->group_depth_ = u32;
        break;
      case 17:
        e->result_ = zigzag32(v);
        break;
      case 18:
        e->flags_ = u32;
        break;
      case 19:
        e->aux_ = zigzag32(v);
        break;
      case 20:
        e->aux2_ = zigzag32(v);
        break;
      case 21:
        e->aux64_ = v;
        break;
      case 22:
        e->stack_id_ = u32;
        break;
      case 23:
        e->enqueue_ns_ = static_cast<int64_t>(v);
        break;
      case 24:
        e->start_ns_ = static_cast<int64_t>(v);
        break;
      case 25:
        e->end_ns_ = static_cast<int64_t>(v);
        break;
      default:
        if (field == 0 || !c.skip(type)) return false;
    }
  }
  return true;
}

}  // namespace

EventRecord eventFromFields(const WireEvent& w) {
  EventFields e;
  e.index = w.index_;
  e.op = static_cast<OpType>(w.op_);
  e.state = static_cast<EventState>(w.state_);
  e.comm_id = w.comm_id_;
  e.comm_index = w.comm_index_;
  e.op_seq = w.op_seq_;
  e.count = w.count_;
  e.stream = w.stream_;
  e.rank = w.rank_;
  e.nranks = w.nranks_;
  e.peer = w.peer_;
  e.device = w.device_;
  e.redop = w.redop_;
  e.dtype = w.dtype_;
  e.tid = w.tid_;
  e.group_depth = w.group_depth_;
  e.result = w.result_;
  e.flags = w.flags_;
  e.stack_id = w.stack_id_;
  e.enqueue_ns = w.enqueue_ns_;
  e.start_ns = w.start_ns_;
  e.end_ns = w.end_ns_;
  return EventRecord(e);
}

bool splitDumpEvents(const char* data, size_t size, std::vector<EventRecord>* events,
                     std::vector<EventAux>* aux, std::string* rest) {
  const auto* begin = reinterpret_cast<const uint8_t*>(data);
  // First pass: count the events (for one prefaulted allocation) and copy the other fields.
  Cursor c{begin, begin + size};
  size_t count = 0;
  rest->clear();
  while (c.p < c.end) {
    const uint8_t* field_start = c.p;
    uint64_t key = 0;
    if (!c.varint(&key) || (key >> 3) == 0) return false;
    if ((key >> 3) == kDumpEventsField) {
      const uint8_t* b = nullptr;
      size_t n = 0;
      if ((key & 7) != kLength || !c.length(&b, &n)) return false;
      ++count;
      continue;
    }
    if (!c.skip(static_cast<uint32_t>(key & 7))) return false;
    rest->append(reinterpret_cast<const char*>(field_start), c.p - field_start);
  }
  events->clear();
  aux->clear();
  reserveAndPrefault(events, count);
  c = Cursor{begin, begin + size};
  while (c.p < c.end) {
    uint64_t key = 0;
    c.varint(&key);  // checked by the first pass
    if ((key >> 3) != kDumpEventsField) {
      c.skip(static_cast<uint32_t>(key & 7));
      continue;
    }
    const uint8_t* b = nullptr;
    size_t n = 0;
    c.length(&b, &n);
    WireEvent w;
    if (!decodeEvent(b, n, &w)) return false;
    events->push_back(eventFromFields(w));
    if (w.aux_ != 0 || w.aux2_ != 0 || w.aux64_ != 0) {
      aux->push_back(EventAux{w.index_, w.aux_, w.aux2_, w.aux64_});
    }
  }
  return true;
}

}  // namespace ncclrec::format
