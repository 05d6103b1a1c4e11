#include "format/event_wire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "format/dump_io.h"

namespace ncclrec::format {
namespace {

// Events with every field away from its default, negative sint32 values and 10-byte varints
// included, and one with aux words.
RankData someEvents() {
  RankData d;
  d.pid = 7;
  d.host = "h";
  for (uint64_t i = 0; i < 5; ++i) {
    EventRecord e;
    e.index = 1000 + i;
    e.op = i % 2 ? OpType::kRecv : OpType::kAllReduce;
    e.state = EventState::kStarted;
    e.setCommId(0xfedcba9876543210ull + i);
    e.setCommIndex(i == 0 ? 0xffffffffu : static_cast<uint32_t>(i));
    e.op_seq = (1ull << 40) + i;
    e.count = ~0ull - i;
    e.setStream(0x7f00deadbeefull);
    e.setRank(-1 - static_cast<int>(i));
    e.setNranks(100000);
    e.setPeer(i == 3 ? -(1 << 23) : 4);
    e.setDevice(-1);
    e.redop = -1;
    e.dtype = 9;
    e.setTid(4194303);
    e.group_depth = 2;
    e.result = -3;
    e.flags = 0x9;
    e.setStackId(0xffffffffu);
    e.setEnqueueNs(-10 - static_cast<int64_t>(i));
    e.setStartNs(INT64_MAX);
    e.setEndNs(INT64_MIN);
    d.events.push_back(e);
  }
  d.event_aux.push_back(EventAux{1002, -7, 8, 0x1111222233334444ull});
  return d;
}

std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += static_cast<char>(v | 0x80);
  return out + static_cast<char>(v);
}

// Dump field 25 (events) holding `event`, serialized as is.
std::string eventsField(const std::string& event) {
  return varint(25 << 3 | 2) + varint(event.size()) + event;
}

TEST(EventWireTest, DecodesWhatProtobufDecodes) {
  const RankData d = someEvents();
  const std::string bytes = toProto(d).SerializeAsString();
  std::vector<EventRecord> events;
  std::vector<EventAux> aux;
  std::string rest;
  ASSERT_TRUE(splitDumpEvents(bytes.data(), bytes.size(), &events, &aux, &rest));
  EXPECT_EQ(events, d.events);
  EXPECT_EQ(aux, d.event_aux);
  // What is left parses to the same dump without its events.
  pb::Dump without;
  ASSERT_TRUE(without.ParseFromString(rest));
  pb::Dump expected = toProto(d);
  expected.clear_events();
  EXPECT_EQ(without.SerializeAsString(), expected.SerializeAsString());
  EXPECT_EQ(fromProto(toProto(d)).events, events);
}

TEST(EventWireTest, SkipsUnknownFieldsAsProtobufDoes) {
  const pb::Dump p = toProto(someEvents());
  // Fields 40 (varint), 41 (length-delimited) and 42 (fixed32) after the known ones, as from a
  // newer writer, and a repeated rank (the last one wins).
  const std::string extra = varint(40 << 3 | 0) + varint(150) + varint(41 << 3 | 2) + varint(3) +
                            "xyz" + varint(42 << 3 | 5) + std::string("\x01\x02\x03\x04", 4) +
                            varint(9 << 3 | 0) + varint(8);
  const std::string bytes = eventsField(p.events(0).SerializeAsString() + extra) +
                            eventsField(p.events(1).SerializeAsString());
  std::vector<EventRecord> events;
  std::vector<EventAux> aux;
  std::string rest;
  ASSERT_TRUE(splitDumpEvents(bytes.data(), bytes.size(), &events, &aux, &rest));
  pb::Dump parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(events, fromProto(parsed).events);
  EXPECT_EQ(events[0].rank(), 4);
}

TEST(EventWireTest, RefusesWhatItDoesNotExpect) {
  const std::string good = toProto(someEvents()).SerializeAsString();
  std::vector<EventRecord> events;
  std::vector<EventAux> aux;
  std::string rest;
  // Truncated anywhere: never reads past the end, never succeeds.
  for (size_t n = 1; n < good.size(); n += 7) {
    std::string cut = good.substr(0, n);
    if (splitDumpEvents(cut.data(), cut.size(), &events, &aux, &rest)) {
      // Only a cut on a field boundary of the outer message can pass; protobuf agrees then.
      pb::Dump p;
      EXPECT_TRUE(p.ParseFromString(cut)) << n;
    }
  }
  // A known Event field with another wire type (rank as fixed64): protobuf would keep it as an
  // unknown field; the fast path leaves such a dump to protobuf.
  const std::string odd = eventsField(varint(9 << 3 | 1) + std::string(8, '\0'));
  EXPECT_FALSE(splitDumpEvents(odd.data(), odd.size(), &events, &aux, &rest));
  // Events as something other than a length-delimited field.
  const std::string bad = std::string(1, static_cast<char>(25 << 3 | 0)) + "\x01";
  EXPECT_FALSE(splitDumpEvents(bad.data(), bad.size(), &events, &aux, &rest));
}

}  // namespace
}  // namespace ncclrec::format
