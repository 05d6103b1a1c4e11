// decodePickle (pickle_reader.h; parsePickle is in pickle_json.cc). Values are nodes of a
// PickleDoc, so a memoized dict filled after it was memoized (EMPTY_DICT, BINPUT, ..., SETITEMS)
// is seen filled by every later BINGET, as in Python. Every opcode adds at most one node, so nodes
// are bounded by the input size; container elements by PickleLimits (a container filled in
// several batches between others is moved to the end of `items`), and so is parsePickle's
// expansion to JSON. No allocation per string or per container: strings stay in the input,
// elements in one vector.
#include "format/pickle_reader.h"

#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

namespace ncclrec::format {
namespace {

using Kind = PickleKind;

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

// The decoding loop. The opcodes of a dump's entries are dispatched first, from one switch, each
// with its bounds checks inline; the stack holds node indexes only (MARKs are positions kept
// apart in marks_, so finding the topmost one costs nothing).
class Machine {
 public:
  Machine(const uint8_t* data, size_t size, const std::string& path, const PickleLimits& limits,
          PickleDoc* doc)
      : p_(data),
        size_(size),
        path_(path),
        limits_(limits),
        doc_(*doc),
        stack_(doc->work_stack),
        marks_(doc->work_marks),
        memo_(doc->work_memo) {
    doc_.input = data;
    doc_.nodes.clear();
    doc_.items.clear();
    stack_.clear();
    marks_.clear();
    memo_.clear();
    items_budget_ = limits.min_value_nodes + limits.value_nodes_per_byte * size;
    // Upper bounds are the input size (one node per opcode); these cover a Flight Recorder dump.
    doc_.nodes.reserve(size / 6);
    doc_.items.reserve(size / 8);
    memo_.reserve(size / 16);
    stack_.reserve(256);
    marks_.reserve(64);
  }

  base::Status run();

 private:
  // Every step answers true, or false with the error line in error_ (a Status per opcode would
  // cost more than most opcodes).
  [[gnu::cold]] [[gnu::noinline]] bool fail(const std::string& why) {
    error_ = path_ + ": offset " + std::to_string(op_at_) + ": " + why;
    return false;
  }
  [[gnu::always_inline]] bool take(size_t n, const uint8_t** out) {
    if (size_ - pos_ < n) return false;
    *out = p_ + pos_;
    pos_ += n;
    return true;
  }
  static uint64_t littleEndian(const uint8_t* b, size_t n) {
    uint64_t v = 0;
    for (size_t k = n; k-- > 0;) v = (v << 8) | b[k];
    return v;
  }
  [[gnu::always_inline]] bool push(Kind kind, int64_t i = 0, uint64_t first = 0,
                                   uint32_t count = 0) {
    stack_.push_back(static_cast<uint32_t>(doc_.nodes.size()));
    // Built in place, field by field: copying in one built aside went through memory and cost
    // about a sixth of the decoding (perf).
    PickleNode& n = doc_.nodes.emplace_back();
    n.kind = kind;
    n.count = count;
    n.first = first;
    n.i = i;
    return true;
  }
  bool pushContainer(Kind kind) { return push(kind, 0, doc_.items.size()); }
  // BININT1, BININT2 (unsigned), BININT (signed, 4 bytes).
  [[gnu::always_inline]] bool pushInt(size_t n, const char* truncated) {
    const uint8_t* b = nullptr;
    if (!take(n, &b)) return fail(truncated);
    const uint64_t v = littleEndian(b, n);
    return push(Kind::kInt, n == 4 ? static_cast<int32_t>(v) : static_cast<int64_t>(v));
  }
  // True when the top n entries of the stack are values (none of them a MARK).
  [[gnu::always_inline]] bool valuesOnTop(size_t n) const {
    return stack_.size() >= n && (marks_.empty() || marks_.back() <= stack_.size() - n);
  }
  bool popMark(size_t* at) {
    if (marks_.empty()) return fail("no MARK before this opcode");
    *at = marks_.back();
    marks_.pop_back();
    return true;
  }
  [[gnu::always_inline]] bool memoPut(uint64_t slot) {
    if (!valuesOnTop(1)) return fail("memo store with nothing to store");
    if (slot >= limits_.max_memo)
      return fail("memo slot " + std::to_string(slot) + " over the limit");
    if (slot == memo_.size()) {
      memo_.push_back(stack_.back());  // the pickler numbers its slots in order
      return true;
    }
    if (slot > memo_.size()) memo_.resize(static_cast<size_t>(slot) + 1, kEmptySlot);
    memo_[static_cast<size_t>(slot)] = stack_.back();
    return true;
  }
  [[gnu::always_inline]] bool memoGet(uint64_t slot) {
    if (slot >= memo_.size() || memo_[static_cast<size_t>(slot)] == kEmptySlot) {
      return fail("memo slot " + std::to_string(slot) + " read before it was stored");
    }
    stack_.push_back(memo_[static_cast<size_t>(slot)]);
    return true;
  }
  bool other(uint8_t op, bool* stop);
  bool pushString(size_t len_bytes);
  bool pushLong(size_t len_bytes);
  bool tuple(size_t from);
  bool fill(Kind want, size_t from, const char* what);

  static constexpr uint32_t kEmptySlot = std::numeric_limits<uint32_t>::max();
  const uint8_t* p_;
  size_t size_;
  size_t pos_ = 0;
  size_t op_at_ = 0;
  const std::string& path_;
  const PickleLimits& limits_;
  PickleDoc& doc_;
  size_t items_budget_ = 0;
  std::vector<uint32_t>& stack_;  // node indexes
  std::vector<size_t>& marks_;    // stack_.size() at each MARK, innermost last
  std::vector<uint32_t>& memo_;   // node indexes; kEmptySlot = not stored
  std::string error_;
};

bool Machine::pushString(size_t len_bytes) {
  const uint8_t* b = nullptr;
  if (!take(len_bytes, &b)) return fail("truncated string length");
  const uint64_t len = littleEndian(b, len_bytes);
  if (len > limits_.max_string_bytes || len > std::numeric_limits<uint32_t>::max()) {
    return fail("string of " + std::to_string(len) + " bytes is over the limit");
  }
  if (!take(static_cast<size_t>(len), &b)) return fail("truncated string");
  push(Kind::kStr, 0, static_cast<uint64_t>(b - p_), static_cast<uint32_t>(len));
  return true;
}

bool Machine::pushLong(size_t len_bytes) {
  const uint8_t* b = nullptr;
  if (!take(len_bytes, &b)) return fail("truncated integer length");
  const uint64_t len = littleEndian(b, len_bytes);
  if (len > 8) return fail("integer of " + std::to_string(len) + " bytes is wider than 64 bits");
  if (!take(static_cast<size_t>(len), &b)) return fail("truncated integer");
  uint64_t v = littleEndian(b, static_cast<size_t>(len));
  if (len > 0 && len < 8 && (b[len - 1] & 0x80) != 0) v |= ~uint64_t{0} << (8 * len);  // sign
  push(Kind::kInt, static_cast<int64_t>(v));
  return true;
}

// A tuple of stack_[from, end), which replace it on the stack.
bool Machine::tuple(size_t from) {
  const size_t n = stack_.size() - from;
  if (doc_.items.size() + n > items_budget_) return fail("value past the size limit");
  const uint64_t first = doc_.items.size();
  doc_.items.insert(doc_.items.end(), stack_.begin() + static_cast<std::ptrdiff_t>(from),
                    stack_.end());
  stack_.resize(from);
  push(Kind::kTuple, 0, first, static_cast<uint32_t>(n));
  return true;
}

// SETITEM(S) and APPEND(S): stack_[from, end) go into the container below them, which must be a
// value, not a MARK. Elements stay contiguous: a container whose elements are not the last ones
// of `items` moves there first.
bool Machine::fill(Kind want, size_t from, const char* what) {
  const size_t n = stack_.size() - from;
  if (from == 0 || (!marks_.empty() && marks_.back() >= from) ||
      doc_.nodes[stack_[from - 1]].kind != want) {
    return fail(std::string(what) + " without a " + (want == Kind::kDict ? "dict" : "list") +
                " below");
  }
  if (want == Kind::kDict) {
    if (n % 2 != 0) return fail("odd number of dict items");
    for (size_t k = from; k < stack_.size(); k += 2) {
      if (doc_.nodes[stack_[k]].kind != Kind::kStr) return fail("dict key is not a string");
    }
  }
  PickleNode& target = doc_.nodes[stack_[from - 1]];
  const bool at_end = target.first + target.count == doc_.items.size();
  const size_t moved = at_end ? 0 : target.count;
  if (doc_.items.size() + moved + n > items_budget_ ||
      target.count + n > std::numeric_limits<uint32_t>::max()) {
    return fail("value expands past the size limit (containers filled in turns?)");
  }
  if (!at_end) {
    const uint64_t first = doc_.items.size();
    for (uint32_t k = 0; k < target.count; ++k) {
      doc_.items.push_back(doc_.items[static_cast<size_t>(target.first) + k]);
    }
    target.first = first;
  }
  if (n == 1) {
    doc_.items.push_back(stack_.back());
  } else {
    doc_.items.insert(doc_.items.end(), stack_.begin() + static_cast<std::ptrdiff_t>(from),
                      stack_.end());
  }
  target.count += static_cast<uint32_t>(n);
  stack_.resize(from);
  return true;
}

// Scalars and containers seldom met in a dump, framing, STOP, and the refusals.
bool Machine::other(uint8_t op, bool* stop) {
  const uint8_t* b = nullptr;
  size_t mark = 0;
  switch (op) {
    case 0x80:  // PROTO
      if (!take(1, &b)) return fail("truncated PROTO");
      if (b[0] < 2 || b[0] > 5)
        return fail("pickle protocol " + std::to_string(b[0]) + " (2-5 read)");
      return true;
    case 0x95:  // FRAME: a length hint only
      if (!take(8, &b)) return fail("truncated FRAME");
      return true;
    case '.':
      *stop = true;
      return true;
    case 'N':
      push(Kind::kNull);
      return true;
    case 0x8b:
      return pushLong(4);
    case 'G': {
      if (!take(8, &b)) return fail("truncated BINFLOAT");
      uint64_t bits = 0;
      for (int k = 0; k < 8; ++k) bits = (bits << 8) | b[k];  // big-endian
      push(Kind::kFloat, static_cast<int64_t>(bits));
      return true;
    }
    case 0x8d:
      return pushString(8);
    case ')':
      pushContainer(Kind::kTuple);
      return true;
    case 't':
      if (!popMark(&mark)) return false;
      return tuple(mark);
    case 'j':
      if (!take(4, &b)) return fail("truncated LONG_BINGET");
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

// run()'s handlers: an opcode's byte -> its label in run()'s table. The opcodes of a dump's
// entries have their own; every other byte goes to other().
enum Handler : uint8_t {
  kOther,
  kBinget,
  kLongBinput,
  kBinput,
  kMemoize,
  kEmptyList,
  kEmptyDict,
  kMarkOp,
  kAppend,
  kSetitem,
  kAppends,
  kSetitems,
  kBinint1,
  kBinint2,
  kBinint,
  kLong1,
  kBinunicode,
  kShortBinunicode,
  kTupleN,
  kBool,
};

constexpr std::array<uint8_t, 256> kHandlerOf = [] {
  std::array<uint8_t, 256> t{};  // kOther
  t['h'] = kBinget, t['r'] = kLongBinput, t['q'] = kBinput, t[0x94] = kMemoize;
  t[']'] = kEmptyList, t['}'] = kEmptyDict, t['('] = kMarkOp;
  t['a'] = kAppend, t['s'] = kSetitem, t['e'] = kAppends, t['u'] = kSetitems;
  t['K'] = kBinint1, t['M'] = kBinint2, t['J'] = kBinint, t[0x8a] = kLong1;
  t['X'] = kBinunicode, t[0x8c] = kShortBinunicode;
  t[0x85] = t[0x86] = t[0x87] = kTupleN, t[0x88] = t[0x89] = kBool;
  return t;
}();

// Threaded dispatch (labels as values, a GCC and Clang extension): every handler jumps to the
// next opcode's handler itself, so the branch predictor learns which opcode follows which; one
// shared switch mispredicted so often that it cost half of the decoding.
[[gnu::flatten]] base::Status Machine::run() {
  static const void* const kLabels[] = {
      &&other,  &&binget, &&long_binput, &&binput,           &&memoize,  &&empty_list, &&empty_dict,
      &&mark,   &&append, &&setitem,     &&appends,          &&setitems, &&binint1,    &&binint2,
      &&binint, &&long1,  &&binunicode,  &&short_binunicode, &&tuple_n,  &&boolean};
  const uint8_t* b = nullptr;
  uint8_t op = 0;
  size_t from = 0;
  bool stop = false;
#define NCCLREC_PICKLE_NEXT()             \
  do {                                    \
    op_at_ = pos_;                        \
    if (pos_ == size_) goto end_of_input; \
    op = p_[pos_++];                      \
    goto* kLabels[kHandlerOf[op]];        \
  } while (0)
#define NCCLREC_PICKLE_DO(step) \
  do {                          \
    if (!(step)) goto failed;   \
    NCCLREC_PICKLE_NEXT();      \
  } while (0)
  NCCLREC_PICKLE_NEXT();
binget:
  NCCLREC_PICKLE_DO(take(1, &b) ? memoGet(b[0]) : fail("truncated BINGET"));
long_binput:
  NCCLREC_PICKLE_DO(take(4, &b) ? memoPut(littleEndian(b, 4)) : fail("truncated LONG_BINPUT"));
binput:
  NCCLREC_PICKLE_DO(take(1, &b) ? memoPut(b[0]) : fail("truncated BINPUT"));
memoize:
  NCCLREC_PICKLE_DO(memoPut(memo_.size()));
empty_list:
  NCCLREC_PICKLE_DO(pushContainer(Kind::kList));
empty_dict:
  NCCLREC_PICKLE_DO(pushContainer(Kind::kDict));
mark:
  marks_.push_back(stack_.size());
  NCCLREC_PICKLE_NEXT();
append:
  NCCLREC_PICKLE_DO(valuesOnTop(2) ? fill(Kind::kList, stack_.size() - 1, "APPEND")
                                   : fail("APPEND on a short stack"));
setitem:
  NCCLREC_PICKLE_DO(valuesOnTop(3) ? fill(Kind::kDict, stack_.size() - 2, "SETITEM")
                                   : fail("SETITEM on a short stack"));
appends:
  NCCLREC_PICKLE_DO(popMark(&from) && fill(Kind::kList, from, "APPENDS"));
setitems:
  NCCLREC_PICKLE_DO(popMark(&from) && fill(Kind::kDict, from, "SETITEMS"));
binint1:
  NCCLREC_PICKLE_DO(pushInt(1, "truncated BININT1"));
binint2:
  NCCLREC_PICKLE_DO(pushInt(2, "truncated BININT2"));
binint:
  NCCLREC_PICKLE_DO(pushInt(4, "truncated BININT"));
long1:
  NCCLREC_PICKLE_DO(pushLong(1));
binunicode:
  NCCLREC_PICKLE_DO(pushString(4));
short_binunicode:
  NCCLREC_PICKLE_DO(pushString(1));
tuple_n:
  NCCLREC_PICKLE_DO(valuesOnTop(op - 0x84u) ? tuple(stack_.size() - (op - 0x84u))
                                            : fail("tuple of more values than the stack has"));
boolean:
  NCCLREC_PICKLE_DO(push(Kind::kBool, op == 0x88 ? 1 : 0));
other:
  if (!other(op, &stop)) goto failed;
  if (!stop) NCCLREC_PICKLE_NEXT();
#undef NCCLREC_PICKLE_DO
#undef NCCLREC_PICKLE_NEXT
  if (!valuesOnTop(1)) {
    fail("STOP with nothing to return");
    goto failed;
  }
  doc_.root_node = stack_.back();
  return base::okStatus();
end_of_input:
  fail(pos_ == 0 ? "empty file" : "truncated: no STOP opcode");
failed:
  return base::Status::error(std::move(error_));
}

}  // namespace

base::Status decodePickleInto(const void* data, size_t size, const std::string& path,
                              PickleDoc* doc, const PickleLimits& limits) {
  Machine m(static_cast<const uint8_t*>(data), size, path, limits, doc);
  return m.run();
}

base::StatusOr<PickleDoc> decodePickle(const void* data, size_t size, const std::string& path,
                                       const PickleLimits& limits) {
  PickleDoc doc;
  NCCLREC_RETURN_IF_ERROR(decodePickleInto(data, size, path, &doc, limits));
  return doc;
}

bool looksLikePickle(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x80 &&
         static_cast<uint8_t>(bytes[1]) >= 2 && static_cast<uint8_t>(bytes[1]) <= 5;
}

}  // namespace ncclrec::format
