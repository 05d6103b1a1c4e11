// parsePickle (pickle_reader.h). Values live in an arena while the pickle runs, so a memoized
// dict filled after it was memoized (EMPTY_DICT, BINPUT, ..., SETITEMS) is seen filled by every
// later BINGET, as in Python; the arena becomes JSON at STOP. Every opcode adds at most one node,
// so the arena is bounded by the input size; the expansion to JSON is bounded by PickleLimits.
#include "recorder/format/pickle_reader.h"

#include <bit>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

namespace ncclrec::format {
namespace {

using Json = nlohmann::json;

constexpr uint32_t kMark = std::numeric_limits<uint32_t>::max();

struct Node {
  enum Kind : uint8_t { kNull, kBool, kInt, kFloat, kStr, kList, kTuple, kDict } kind = kNull;
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<uint32_t> items;  // list and tuple elements; dict keys and values, alternating

  static Node of(Kind k, int64_t v) {
    Node n;
    n.kind = k;
    n.i = v;
    return n;
  }
  static Node real(double v) {
    Node n;
    n.kind = kFloat;
    n.d = v;
    return n;
  }
  static Node seq(Kind k, std::vector<uint32_t> v) {
    Node n;
    n.kind = k;
    n.items = std::move(v);
    return n;
  }
};

// Name of an opcode for the error line: the subset's and the refused ones people meet.
const char* opcodeName(uint8_t op) {
  // clang-format off
  static constexpr std::pair<uint8_t, const char*> kNames[] = {
      {'c', "GLOBAL"}, {0x93, "STACK_GLOBAL"}, {'R', "REDUCE"}, {'b', "BUILD"}, {'i', "INST"},
      {'o', "OBJ"}, {0x81, "NEWOBJ"}, {0x92, "NEWOBJ_EX"}, {'P', "PERSID"}, {'Q', "BINPERSID"},
      {0x82, "EXT1"}, {0x83, "EXT2"}, {0x84, "EXT4"}, {'I', "INT"}, {'L', "LONG"}, {'F', "FLOAT"},
      {'S', "STRING"}, {'T', "BINSTRING"}, {'U', "SHORT_BINSTRING"}, {'V', "UNICODE"},
      {'B', "BINBYTES"}, {'C', "SHORT_BINBYTES"}, {0x8e, "BINBYTES8"}, {0x96, "BYTEARRAY8"},
      {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"}, {'p', "PUT"}, {'g', "GET"}, {'0', "POP"},
      {'1', "DUP"}, {'2', "POP_MARK"}, {'l', "LIST"}, {'d', "DICT"}, {0x8f, "EMPTY_SET"},
      {0x90, "ADDITEMS"}, {0x91, "FROZENSET"}, {0x80, "PROTO"},
  };
  // clang-format on
  for (const auto& [code, name] : kNames) {
    if (code == op) return name;
  }
  return nullptr;
}

std::string hexByte(uint8_t b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[b >> 4] + kDigits[b & 15];
}

class Machine {
 public:
  Machine(const uint8_t* data, size_t size, const std::string& path, const PickleLimits& limits)
      : p_(data), size_(size), path_(path), limits_(limits) {}

  StatusOr<Json> run();

 private:
  Status fail(const std::string& why) const {
    return Status::error(path_ + ": offset " + std::to_string(op_at_) + ": " + why);
  }
  bool take(size_t n, const uint8_t** out) {
    if (size_ - pos_ < n) return false;
    *out = p_ + pos_;
    pos_ += n;
    return true;
  }
  uint64_t littleEndian(const uint8_t* b, size_t n) const {
    uint64_t v = 0;
    for (size_t k = n; k-- > 0;) v = (v << 8) | b[k];
    return v;
  }
  uint32_t add(Node n) {
    nodes_.push_back(std::move(n));
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  Status step(uint8_t op, bool* stop);
  Status structure(uint8_t op);
  Status pushString(size_t len_bytes);
  Status pushLong(size_t len_bytes);
  Status memoPut(uint64_t slot);
  Status memoGet(uint64_t slot);
  Status popToMark(std::vector<uint32_t>* items);
  Status fillTarget(Node::Kind want, const std::vector<uint32_t>& items, const char* what);
  Status toJson(uint32_t node, size_t depth, Json* out);

  const uint8_t* p_;
  size_t size_;
  size_t pos_ = 0;
  size_t op_at_ = 0;
  const std::string& path_;
  const PickleLimits& limits_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> stack_;  // node indexes and kMark
  std::vector<uint32_t> memo_;   // kMark = empty slot
  size_t budget_ = 0;            // JSON nodes left to build
};

Status Machine::pushString(size_t len_bytes) {
  const uint8_t* b = nullptr;
  if (!take(len_bytes, &b)) return fail("truncated string length");
  const uint64_t len = littleEndian(b, len_bytes);
  if (len > limits_.max_string_bytes) {
    return fail("string of " + std::to_string(len) + " bytes is over the limit");
  }
  if (!take(static_cast<size_t>(len), &b)) return fail("truncated string");
  Node n;
  n.kind = Node::kStr;
  n.s.assign(reinterpret_cast<const char*>(b), static_cast<size_t>(len));
  stack_.push_back(add(std::move(n)));
  return okStatus();
}

Status Machine::pushLong(size_t len_bytes) {
  const uint8_t* b = nullptr;
  if (!take(len_bytes, &b)) return fail("truncated integer length");
  const uint64_t len = littleEndian(b, len_bytes);
  if (len > 8) return fail("integer of " + std::to_string(len) + " bytes is wider than 64 bits");
  if (!take(static_cast<size_t>(len), &b)) return fail("truncated integer");
  uint64_t v = littleEndian(b, static_cast<size_t>(len));
  if (len > 0 && len < 8 && (b[len - 1] & 0x80) != 0) v |= ~uint64_t{0} << (8 * len);  // sign
  Node n;
  n.kind = Node::kInt;
  n.i = static_cast<int64_t>(v);
  stack_.push_back(add(std::move(n)));
  return okStatus();
}

Status Machine::memoPut(uint64_t slot) {
  if (stack_.empty() || stack_.back() == kMark) return fail("memo store with nothing to store");
  if (slot >= limits_.max_memo)
    return fail("memo slot " + std::to_string(slot) + " over the limit");
  if (slot >= memo_.size()) memo_.resize(static_cast<size_t>(slot) + 1, kMark);
  memo_[static_cast<size_t>(slot)] = stack_.back();
  return okStatus();
}

Status Machine::memoGet(uint64_t slot) {
  if (slot >= memo_.size() || memo_[static_cast<size_t>(slot)] == kMark) {
    return fail("memo slot " + std::to_string(slot) + " read before it was stored");
  }
  stack_.push_back(memo_[static_cast<size_t>(slot)]);
  return okStatus();
}

Status Machine::popToMark(std::vector<uint32_t>* items) {
  size_t k = stack_.size();
  while (k > 0 && stack_[k - 1] != kMark) --k;
  if (k == 0) return fail("no MARK before this opcode");
  items->assign(stack_.begin() + static_cast<std::ptrdiff_t>(k), stack_.end());
  stack_.resize(k - 1);
  return okStatus();
}

// SETITEM(S) and APPEND(S): the container below the popped items gets them.
Status Machine::fillTarget(Node::Kind want, const std::vector<uint32_t>& items, const char* what) {
  if (stack_.empty() || stack_.back() == kMark || nodes_[stack_.back()].kind != want) {
    return fail(std::string(what) + " without a " + (want == Node::kDict ? "dict" : "list") +
                " below");
  }
  if (want == Node::kDict && items.size() % 2 != 0) return fail("odd number of dict items");
  Node& target = nodes_[stack_.back()];
  target.items.insert(target.items.end(), items.begin(), items.end());
  return okStatus();
}

Status Machine::step(uint8_t op, bool* stop) {
  const uint8_t* b = nullptr;
  const auto scalar = [&](Node n) { stack_.push_back(add(std::move(n))); };
  const auto need = [&](size_t n) { return take(n, &b); };
  switch (op) {
    case 0x80:  // PROTO
      if (!need(1)) return fail("truncated PROTO");
      if (b[0] < 2 || b[0] > 5)
        return fail("pickle protocol " + std::to_string(b[0]) + " (2-5 read)");
      return okStatus();
    case 0x95:  // FRAME: a length hint only
      if (!need(8)) return fail("truncated FRAME");
      return okStatus();
    case '.':
      *stop = true;
      return okStatus();
    case 'N':
      scalar(Node{});
      return okStatus();
    case 0x88:
    case 0x89:
      scalar(Node::of(Node::kBool, op == 0x88 ? 1 : 0));
      return okStatus();
    case 'K':
      if (!need(1)) return fail("truncated BININT1");
      scalar(Node::of(Node::kInt, b[0]));
      return okStatus();
    case 'M':
      if (!need(2)) return fail("truncated BININT2");
      scalar(Node::of(Node::kInt, static_cast<int64_t>(littleEndian(b, 2))));
      return okStatus();
    case 'J':
      if (!need(4)) return fail("truncated BININT");
      scalar(Node::of(Node::kInt, static_cast<int32_t>(littleEndian(b, 4))));
      return okStatus();
    case 0x8a:
      return pushLong(1);
    case 0x8b:
      return pushLong(4);
    case 'G': {
      if (!need(8)) return fail("truncated BINFLOAT");
      uint64_t bits = 0;
      for (int k = 0; k < 8; ++k) bits = (bits << 8) | b[k];  // big-endian
      scalar(Node::real(std::bit_cast<double>(bits)));
      return okStatus();
    }
    case 0x8c:
      return pushString(1);
    case 'X':
      return pushString(4);
    case 0x8d:
      return pushString(8);
    default:
      return structure(op);
  }
}

// Containers, marks and the memo.
Status Machine::structure(uint8_t op) {
  const uint8_t* b = nullptr;
  const auto scalar = [&](Node n) { stack_.push_back(add(std::move(n))); };
  const auto need = [&](size_t n) { return take(n, &b); };
  std::vector<uint32_t> items;
  switch (op) {
    case '(':
      stack_.push_back(kMark);
      return okStatus();
    case '}':
      scalar(Node::of(Node::kDict, 0));
      return okStatus();
    case ']':
      scalar(Node::of(Node::kList, 0));
      return okStatus();
    case ')':
      scalar(Node::of(Node::kTuple, 0));
      return okStatus();
    case 't':
      NCCLREC_RETURN_IF_ERROR(popToMark(&items));
      scalar(Node::seq(Node::kTuple, std::move(items)));
      return okStatus();
    case 0x85:
    case 0x86:
    case 0x87: {
      const size_t n = op - 0x84u;
      if (stack_.size() < n) return fail("tuple of " + std::to_string(n) + " from a shorter stack");
      items.assign(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
      for (uint32_t x : items)
        if (x == kMark) return fail("tuple item is a MARK");
      stack_.resize(stack_.size() - n);
      scalar(Node::seq(Node::kTuple, std::move(items)));
      return okStatus();
    }
    case 'u':
      NCCLREC_RETURN_IF_ERROR(popToMark(&items));
      return fillTarget(Node::kDict, items, "SETITEMS");
    case 'e':
      NCCLREC_RETURN_IF_ERROR(popToMark(&items));
      return fillTarget(Node::kList, items, "APPENDS");
    case 's':
    case 'a': {
      const size_t n = op == 's' ? 2 : 1;
      if (stack_.size() < n + 1)
        return fail(op == 's' ? "SETITEM on a short stack" : "APPEND on a short stack");
      items.assign(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
      for (uint32_t x : items)
        if (x == kMark) return fail("item is a MARK");
      stack_.resize(stack_.size() - n);
      return fillTarget(op == 's' ? Node::kDict : Node::kList, items,
                        op == 's' ? "SETITEM" : "APPEND");
    }
    case 'q':
      if (!need(1)) return fail("truncated BINPUT");
      return memoPut(b[0]);
    case 'r':
      if (!need(4)) return fail("truncated LONG_BINPUT");
      return memoPut(littleEndian(b, 4));
    case 0x94:
      return memoPut(memo_.size());
    case 'h':
      if (!need(1)) return fail("truncated BINGET");
      return memoGet(b[0]);
    case 'j':
      if (!need(4)) return fail("truncated LONG_BINGET");
      return memoGet(littleEndian(b, 4));
    default: {
      const char* name = opcodeName(op);
      return fail("opcode " +
                  (name != nullptr ? std::string(name) + " (" + hexByte(op) + ")" : hexByte(op)) +
                  " is not part of a Flight Recorder dump (only plain data is read; nothing is "
                  "executed): refused");
    }
  }
}

Status Machine::toJson(uint32_t node, size_t depth, Json* out) {
  if (budget_ == 0) return fail("value expands past the size limit (shared references?)");
  --budget_;
  if (depth > limits_.max_depth) {
    return fail("nesting deeper than " + std::to_string(limits_.max_depth) +
                " (or a container that holds itself)");
  }
  const Node& n = nodes_[node];
  switch (n.kind) {
    case Node::kNull:
      *out = nullptr;
      return okStatus();
    case Node::kBool:
      *out = n.i != 0;
      return okStatus();
    case Node::kInt:
      *out = n.i;
      return okStatus();
    case Node::kFloat:
      *out = n.d;
      return okStatus();
    case Node::kStr:
      *out = n.s;
      return okStatus();
    case Node::kList:
    case Node::kTuple:
      *out = Json::array();
      for (uint32_t item : n.items) {
        Json v;
        NCCLREC_RETURN_IF_ERROR(toJson(item, depth + 1, &v));
        out->push_back(std::move(v));
      }
      return okStatus();
    case Node::kDict:
      *out = Json::object();
      for (size_t k = 0; k + 1 < n.items.size(); k += 2) {
        const Node& key = nodes_[n.items[k]];
        if (key.kind != Node::kStr) return fail("dict key is not a string");
        Json v;
        NCCLREC_RETURN_IF_ERROR(toJson(n.items[k + 1], depth + 1, &v));
        (*out)[key.s] = std::move(v);
      }
      return okStatus();
  }
  return fail("internal error: unknown node");
}

StatusOr<Json> Machine::run() {
  bool stop = false;
  while (!stop) {
    op_at_ = pos_;
    const uint8_t* b = nullptr;
    if (!take(1, &b)) return fail(pos_ == 0 ? "empty file" : "truncated: no STOP opcode");
    NCCLREC_RETURN_IF_ERROR(step(b[0], &stop));
  }
  if (stack_.empty() || stack_.back() == kMark) return fail("STOP with nothing to return");
  budget_ = limits_.min_value_nodes + limits_.value_nodes_per_byte * size_;
  Json out;
  NCCLREC_RETURN_IF_ERROR(toJson(stack_.back(), 0, &out));
  return out;
}

}  // namespace

StatusOr<nlohmann::json> parsePickle(const void* data, size_t size, const std::string& path,
                                     const PickleLimits& limits) {
  Machine m(static_cast<const uint8_t*>(data), size, path, limits);
  return m.run();
}

bool looksLikePickle(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x80 &&
         static_cast<uint8_t>(bytes[1]) >= 2 && static_cast<uint8_t>(bytes[1]) <= 5;
}

}  // namespace ncclrec::format
