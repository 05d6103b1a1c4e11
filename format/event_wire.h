// A fast path for the bulk of a dump: the Event messages of pb::Dump::events, decoded straight
// from the protobuf wire format into EventRecord, without a pb::Event allocated per call (at
// 32,768 ranks x 2,000 calls, protobuf's parser, its allocations and the copy out of pb::Event were
// 40 % of ncclrec-analyze's time). Everything else of the dump still goes through protobuf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "format/model.h"

namespace ncclrec::format {

// The fields of one Event message as protobuf's accessors return them (same names, same types
// after the wire's varint truncation), so both paths convert through the same code.
struct WireEvent {
  uint64_t index_ = 0, comm_id_ = 0, op_seq_ = 0, count_ = 0, stream_ = 0, aux64_ = 0;
  int64_t enqueue_ns_ = 0, start_ns_ = 0, end_ns_ = 0;
  int32_t op_ = 0, state_ = 0, rank_ = 0, nranks_ = 0, peer_ = 0, device_ = 0, redop_ = 0,
          dtype_ = 0, result_ = 0, aux_ = 0, aux2_ = 0;
  uint32_t comm_index_ = 0, tid_ = 0, group_depth_ = 0, flags_ = 0, stack_id_ = 0;
};

// The model of one event (model.h): the one conversion both paths use.
EventRecord eventFromFields(const WireEvent& w);

// Splits the serialized pb::Dump `data`: its Event messages (field 25) decoded into `events` and
// `aux` (the events with a non-zero aux word), every other field copied into `rest`, in order, for
// protobuf to parse. False when anything is not as this build writes it (a truncated or malformed
// message, a field of an unexpected wire type): the caller then parses the whole dump with
// protobuf, which gives the same model or rejects the file.
bool splitDumpEvents(const char* data, size_t size, std::vector<EventRecord>* events,
                     std::vector<EventAux>* aux, std::string* rest);

}  // namespace ncclrec::format
