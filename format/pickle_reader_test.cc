#include "format/pickle_reader.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

namespace ncclrec::format {
namespace {

template <size_t N>
std::string bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

base::StatusOr<nlohmann::json> parse(const std::string& b, const PickleLimits& limits = {}) {
  return parsePickle(b.data(), b.size(), "dump_rank_0", limits);
}

// pickle.dumps({"a": [1, 2.5, True, None, "x", -3, 300, 70000, -(2**40)], "b": (1, 2), "c": "é"})
// by Debian's python3, protocols 2 and 4 (5 is byte-identical to 4 here).
const std::string kProto2 = bytes(
    "\x80\x02\x7d\x71\x00\x28\x58\x01\x00\x00\x00\x61\x71\x01\x5d\x71\x02\x28\x4b\x01\x47\x40\x04"
    "\x00\x00\x00\x00\x00\x00\x88\x4e\x58\x01\x00\x00\x00\x78\x71\x03\x4a\xfd\xff\xff\xff\x4d\x2c"
    "\x01\x4a\x70\x11\x01\x00\x8a\x06\x00\x00\x00\x00\x00\xff\x65\x58\x01\x00\x00\x00\x62\x71\x04"
    "\x4b\x01\x4b\x02\x86\x71\x05\x58\x01\x00\x00\x00\x63\x71\x06\x58\x02\x00\x00\x00\xc3\xa9\x71"
    "\x07\x75\x2e");
const std::string kProto4 = bytes(
    "\x80\x04\x95\x46\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x01\x61\x94\x5d\x94\x28\x4b\x01"
    "\x47\x40\x04\x00\x00\x00\x00\x00\x00\x88\x4e\x8c\x01\x78\x94\x4a\xfd\xff\xff\xff\x4d\x2c\x01"
    "\x4a\x70\x11\x01\x00\x8a\x06\x00\x00\x00\x00\x00\xff\x65\x8c\x01\x62\x94\x4b\x01\x4b\x02\x86"
    "\x94\x8c\x01\x63\x94\x8c\x02\xc3\xa9\x94\x75\x2e");

const nlohmann::json kExpected = {
    {"a", {1, 2.5, true, nullptr, "x", -3, 300, 70000, -(int64_t{1} << 40)}},
    {"b", {1, 2}},
    {"c", "\xc3\xa9"}};

TEST(PickleReader, ReadsProtocol2AsTorchAndPythonWriteIt) {
  auto v = parse(kProto2);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(*v, kExpected);
}

TEST(PickleReader, ReadsProtocol4FramesAndMemoize) {
  auto v = parse(kProto4);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(*v, kExpected);
}

TEST(PickleReader, SharedReferencesSeeTheFilledContainer) {
  // {"l": [shared, shared]} where shared = {"name": "f"}: the second is a BINGET of the first.
  auto v =
      parse(bytes("\x80\x02\x7d\x71\x00\x58\x01\x00\x00\x00\x6c\x71\x01\x5d\x71\x02\x28\x7d"
                  "\x71\x03\x58\x04\x00\x00\x00\x6e\x61\x6d\x65\x71\x04\x58\x01\x00\x00\x00"
                  "\x66\x71\x05\x73\x68\x03\x65\x73\x2e"));
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(*v, nlohmann::json::parse(R"({"l": [{"name": "f"}, {"name": "f"}]})"));
  // Appended while empty, filled after through a BINGET: both places see the item (EMPTY_LIST,
  // EMPTY_DICT BINPUT 0, APPEND, BINGET 0, MARK 'k' 1 SETITEMS, APPEND).
  auto late =
      parse(bytes("\x80\x02]q\x01}q\x00"
                  "a\x68\x00(\x8c\x01kK\x01ua."));
  ASSERT_TRUE(late.ok()) << late.status().message();
  EXPECT_EQ(*late, nlohmann::json::parse(R"([{"k": 1}, {"k": 1}])"));
}

// class Evil: __reduce__ = lambda self: (os.system, ("touch /tmp/ncclrec_pwned",))
// pickle.dumps(Evil(), protocol=2): GLOBAL 'posix system', REDUCE.
TEST(PickleReader, RefusesGlobalAndReduceWithTheOffset) {
  auto v =
      parse(bytes("\x80\x02\x63\x70\x6f\x73\x69\x78\x0a\x73\x79\x73\x74\x65\x6d\x0a\x71\x00"
                  "\x58\x18\x00\x00\x00\x74\x6f\x75\x63\x68\x20\x2f\x74\x6d\x70\x2f\x6e\x63"
                  "\x63\x6c\x72\x65\x63\x5f\x70\x77\x6e\x65\x64\x71\x01\x85\x71\x02\x52\x71"
                  "\x03\x2e"));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message().rfind("dump_rank_0: offset 2: opcode GLOBAL (0x63) ", 0), 0u)
      << v.status().message();
  EXPECT_NE(v.status().message().find("refused"), std::string::npos);
}

// The same object at protocol 4: STACK_GLOBAL, then REDUCE.
TEST(PickleReader, RefusesStackGlobal) {
  auto v =
      parse(bytes("\x80\x04\x95\x33\x00\x00\x00\x00\x00\x00\x00\x8c\x05\x70\x6f\x73\x69\x78"
                  "\x94\x8c\x06\x73\x79\x73\x74\x65\x6d\x94\x93\x94\x8c\x18\x74\x6f\x75\x63"
                  "\x68\x20\x2f\x74\x6d\x70\x2f\x6e\x63\x63\x6c\x72\x65\x63\x5f\x70\x77\x6e"
                  "\x65\x64\x94\x85\x94\x52\x94\x2e"));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(),
            "dump_rank_0: offset 28: opcode STACK_GLOBAL (0x93) is not part of a Flight Recorder "
            "dump (only plain data is read; nothing is executed): refused");
}

TEST(PickleReader, RefusesEveryOpcodeThatBuildsObjects) {
  for (const char op : std::string("RbioPQ\x81\x92\x82")) {
    auto v = parse(std::string("\x80\x02N") + op + ".");
    ASSERT_FALSE(v.ok()) << int(op);
    EXPECT_NE(v.status().message().find("offset 3: opcode "), std::string::npos)
        << v.status().message();
  }
}

TEST(PickleReader, EveryTruncationIsOneError) {
  for (size_t n = 0; n < kProto4.size(); ++n) {
    auto v = parse(kProto4.substr(0, n));
    ASSERT_FALSE(v.ok()) << n;
    EXPECT_EQ(v.status().message().rfind("dump_rank_0: offset ", 0), 0u) << v.status().message();
  }
}

TEST(PickleReader, RefusesCyclesAndExpansionBombs) {
  // A list that holds itself: EMPTY_LIST BINPUT 0 BINGET 0 APPEND STOP.
  auto cycle =
      parse(bytes("\x80\x02]q\x00h\x00"
                  "a."));
  ASSERT_FALSE(cycle.ok());
  EXPECT_NE(cycle.status().message().find("holds itself"), std::string::npos);
  // Each level is a list of the previous one twice: 2^40 leaves from ~200 bytes.
  std::string bomb = bytes("\x80\x02K\x01q\x00");
  for (int level = 1; level <= 40; ++level) {
    bomb += std::string("(h") + char(level - 1) + "h" + char(level - 1) + "tq" + char(level);
  }
  bomb += ".";
  auto v = parse(bomb, PickleLimits{.max_depth = 64, .min_value_nodes = 1000});
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("size limit"), std::string::npos) << v.status().message();
}

TEST(PickleReader, RefusesWideIntegersAndNonStringKeys) {
  auto wide = parse(bytes("\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01."));
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find("wider than 64 bits"), std::string::npos);
  auto key = parse(bytes("\x80\x02}K\x01K\x02s."));
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.status().message().find("dict key is not a string"), std::string::npos);
  auto neg = parse(bytes("\x80\x02\x8a\x01\xff."));
  ASSERT_TRUE(neg.ok());
  EXPECT_EQ(*neg, -1);
}

TEST(PickleReader, TheDocumentViewReadsWithoutCopies) {
  auto doc = decodePickle(kProto4.data(), kProto4.size(), "dump_rank_0");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  const PickleValue root = doc->root();
  ASSERT_TRUE(root.isDict());
  EXPECT_EQ(root.size(), 3u);
  const std::optional<PickleValue> a = root.find("a");
  ASSERT_TRUE(a && a->isSequence());
  ASSERT_EQ(a->size(), 9u);
  EXPECT_EQ(a->at(0).integer(), 1);
  EXPECT_EQ(a->at(1).real(), 2.5);
  EXPECT_EQ(a->at(2).kind(), PickleKind::kBool);
  EXPECT_EQ(a->at(3).kind(), PickleKind::kNull);
  EXPECT_EQ(a->at(4).str(), "x");
  EXPECT_EQ(a->at(8).integer(), -(int64_t{1} << 40));
  EXPECT_EQ(root.find("c")->str(), "\xc3\xa9");
  // The string is the input's own bytes.
  EXPECT_GE(root.find("c")->str().data(), kProto4.data());
  EXPECT_LT(root.find("c")->str().data(), kProto4.data() + kProto4.size());
  EXPECT_FALSE(root.find("nope").has_value());
  EXPECT_FALSE(a->find("a").has_value());  // not a dict
  EXPECT_EQ(a->str(), "");                 // not a string
}

// Opcodes and their arguments, byte by byte (no escapes to misread).
std::string ops(std::initializer_list<int> b) {
  std::string out;
  for (int c : b) out.push_back(static_cast<char>(c));
  return out;
}

TEST(PickleReader, LastDuplicateKeyWinsAndSharedValuesAreOneNode) {
  // {"k": 1, "k": 2, "s": "v", "t": <BINGET of "v">}
  const std::string b =
      ops({0x80, 2,   '}',  '(', 0x8c, 1,   'k', 'K',  1, 0x8c, 1,   'k', 'K', 2,  0x8c,
           1,    's', 0x8c, 1,   'v',  'q', 0,   0x8c, 1, 't',  'h', 0,   'u', '.'});
  auto doc = decodePickle(b.data(), b.size(), "d");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_EQ(doc->root().find("k")->integer(), 2);
  EXPECT_EQ(doc->root().find("s")->id(), doc->root().find("t")->id());
}

TEST(PickleReader, ContainersFilledInTurnsKeepTheirItemsInOrder) {
  // outer = [l1, l2] (EMPTY_LIST BINPUT, MARK, two EMPTY_LIST BINPUT, APPENDS); then l1 += 1,
  // l2 += 2, l1 += 3, l2 += 4 (BINGET, BININT1, APPEND); STOP on a BINGET of outer.
  std::string b = ops({0x80, 2, ']', 'q', 0, '(', ']', 'q', 1, ']', 'q', 2, 'e'});
  for (int k = 1; k <= 4; ++k) b += ops({'h', k % 2 == 1 ? 1 : 2, 'K', k, 'a'});
  b += ops({'h', 0, '.'});
  auto json = parsePickle(b.data(), b.size(), "d");
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_EQ(*json, nlohmann::json::parse("[[1, 3], [2, 4]]"));
  // Each turn moves the list to the end of the items: bounded like any other expansion.
  std::string turns = ops({0x80, 2, ']', 'q', 0, ']', 'q', 1});
  for (int k = 0; k < 2000; ++k) turns += ops({'h', 0, 'K', 1, 'a', 'h', 1, 'K', 1, 'a'});
  turns += ops({'.'});
  auto bounded = parsePickle(turns.data(), turns.size(), "d",
                             PickleLimits{.min_value_nodes = 1000, .value_nodes_per_byte = 1});
  ASSERT_FALSE(bounded.ok());
  EXPECT_NE(bounded.status().message().find("size limit"), std::string::npos)
      << bounded.status().message();
}

// MARKs are kept apart from the values: each opcode still sees one where Python's would.
TEST(PickleReader, AMarkIsNeverTakenForAValue) {
  struct Case {
    std::string pickle;
    const char* error;  // nullptr: decodes
  };
  const Case cases[] = {
      {ops({0x80, 2, '}', '(', '(', 0x8c, 1, 'k', 'K', 1, 'u', '.'}), "SETITEMS without a dict"},
      {ops({0x80, 2, ']', '(', 'a', '.'}), "APPEND on a short stack"},
      {ops({0x80, 2, ']', 'K', 1, '(', 'a', '.'}), "APPEND on a short stack"},
      {ops({0x80, 2, '}', 0x8c, 1, 'k', '(', 'K', 1, 's', '.'}), "SETITEM on a short stack"},
      {ops({0x80, 2, 'K', 1, '(', 'K', 2, 0x86, '.'}), "tuple of more values"},
      {ops({0x80, 2, '(', 0x94, '.'}), "memo store with nothing to store"},
      {ops({0x80, 2, 'K', 1, 'e', '.'}), "no MARK before this opcode"},
      {ops({0x80, 2, '(', '.'}), "STOP with nothing to return"},
      // A MARK below the values: the values are still a tuple, then STOP returns it.
      {ops({0x80, 2, '(', 'K', 1, 'K', 2, 0x86, '.'}), nullptr},
      {ops({0x80, 2, ']', '(', 'K', 1, 'K', 2, 'e', '.'}), nullptr},
  };
  for (const Case& c : cases) {
    auto v = parse(c.pickle);
    if (c.error == nullptr) {
      EXPECT_TRUE(v.ok()) << v.status().message();
    } else {
      ASSERT_FALSE(v.ok()) << c.error;
      EXPECT_NE(v.status().message().find(c.error), std::string::npos) << v.status().message();
    }
  }
}

// One doc decoded into again and again (one per reading thread): a failure in between leaves
// nothing behind, and each result is the fresh decode's.
TEST(PickleReader, ADocDecodedIntoAgainGivesWhatAFreshOneGives) {
  PickleDoc doc;
  ASSERT_TRUE(decodePickleInto(kProto4.data(), kProto4.size(), "a", &doc).ok());
  const std::string bad = ops({0x80, 2, ']', 'K', 1, '(', 'a', '.'});
  EXPECT_FALSE(decodePickleInto(bad.data(), bad.size(), "b", &doc).ok());
  const std::string list = ops({0x80, 2, ']', 'q', 0, '(', 'K', 7, 'h', 0, 'e', '.'});
  ASSERT_TRUE(decodePickleInto(list.data(), list.size(), "c", &doc).ok());
  const PickleValue root = doc.root();
  ASSERT_TRUE(root.isSequence());
  ASSERT_EQ(root.size(), 2u);
  EXPECT_EQ(root.at(0).integer(), 7);
  EXPECT_EQ(root.at(1).id(), root.id());  // the list holds itself, as the pickle says
  ASSERT_TRUE(decodePickleInto(kProto2.data(), kProto2.size(), "d", &doc).ok());
  auto fresh = decodePickle(kProto2.data(), kProto2.size(), "d");
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(doc.nodes.size(), fresh->nodes.size());
  EXPECT_EQ(doc.items, fresh->items);
  EXPECT_EQ(doc.root().find("c")->str(), "\xc3\xa9");
}

TEST(PickleReader, TellsPicklesByTheirFirstBytes) {
  EXPECT_TRUE(looksLikePickle(kProto2));
  EXPECT_TRUE(looksLikePickle(kProto4));
  EXPECT_FALSE(looksLikePickle("\x80\x01"));
  EXPECT_FALSE(looksLikePickle("{\"version\": \"2.10\"}"));
}

}  // namespace
}  // namespace ncclrec::format
