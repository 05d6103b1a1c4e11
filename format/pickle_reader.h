// A safe reader for the data-only subset of Python's pickle format that PyTorch Flight Recorder
// dumps use: torch's jit Pickler writes protocol 2 with dicts, lists, tuples, strings, ints,
// floats, bools and None; a dump re-pickled by Python (protocols 2-5) adds a few opcodes for the
// same types (framing, MEMOIZE, short strings, TUPLE1/3, LONG4).
//
// Nothing is ever executed: an opcode that names a global, calls, builds or persists an object
// (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, PERSID, EXT*, ...) and every opcode
// outside the subset is refused with one error naming the file, the byte offset and the opcode.
// Memory is bounded: nesting depth, string length, memo size and the size of the value after
// shared references are expanded are all capped (limits below), so a crafted file cannot make
// the reader loop, recurse without end or allocate more than a small multiple of its size.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ncclrec::format {

struct PickleLimits {
  size_t max_depth = 64;                // nested containers
  size_t max_string_bytes = 64u << 20;  // one string
  size_t max_memo = 1u << 24;           // memo slots
  size_t min_value_nodes = 1u << 20;    // value nodes allowed whatever the input size...
  size_t value_nodes_per_byte = 32;     // ...plus this many per input byte
};

enum class PickleKind : uint8_t { kNull, kBool, kInt, kFloat, kStr, kList, kTuple, kDict };

// One decoded value. Scalars hold their value; a string is a range of the input's bytes; a
// container is a range of PickleDoc::items (a dict's keys and values alternate).
struct PickleNode {
  PickleKind kind = PickleKind::kNull;
  uint32_t count = 0;  // string: bytes; list, tuple: elements; dict: keys + values
  uint64_t first = 0;  // string: offset in the input; container: index in PickleDoc::items
  int64_t i = 0;       // bool, int; a float's bits
};

struct PickleDoc;

// A read-only handle on a node of a PickleDoc; valid while the doc and its input live.
class PickleValue {
 public:
  PickleValue(const PickleDoc* doc, uint32_t node) : doc_(doc), node_(node) {}
  PickleKind kind() const { return node().kind; }
  uint32_t id() const { return node_; }  // equal ids: the same value (a memoized string, say)
  const PickleDoc* doc() const { return doc_; }
  bool isDict() const { return kind() == PickleKind::kDict; }
  bool isSequence() const { return kind() == PickleKind::kList || kind() == PickleKind::kTuple; }
  bool isString() const { return kind() == PickleKind::kStr; }
  bool isInt() const { return kind() == PickleKind::kInt; }
  int64_t integer() const;         // int or bool; 0 otherwise
  double real() const;             // float; 0 otherwise
  std::string_view str() const;    // "" unless a string
  size_t size() const;             // list/tuple elements, dict pairs, 0 otherwise
  PickleValue at(size_t i) const;  // element i of a list or tuple (i < size())
  PickleValue keyAt(size_t i) const { return at(2 * i); }  // pair i of a dict; keys are strings
  PickleValue valueAt(size_t i) const { return at(2 * i + 1); }
  // The value of `key` in a dict (the last one, as Python keeps it); nullopt when absent.
  std::optional<PickleValue> find(std::string_view key) const;

 private:
  const PickleNode& node() const;
  const PickleDoc* doc_;
  uint32_t node_;
};

// A decoded pickle: every value once, shared references shared (a memoized value read twice is
// one node). Strings are not copied: the input must outlive the doc. A doc decoded into again
// keeps its memory (a reader of many files decodes them all into one, with no fresh pages).
struct PickleDoc {
  PickleValue root() const { return PickleValue(this, root_node); }

  const uint8_t* input = nullptr;
  std::vector<PickleNode> nodes;
  std::vector<uint32_t> items;  // container elements, by node index
  uint32_t root_node = 0;
  // The decoder's working space (stack, MARK positions, memo), kept here only for reuse.
  std::vector<uint32_t> work_stack, work_memo;
  std::vector<size_t> work_marks;
};

// The accessors are inline: the conversion calls them a few dozen times per entry.
inline const PickleNode& PickleValue::node() const { return doc_->nodes[node_]; }

inline int64_t PickleValue::integer() const {
  const PickleNode& n = node();
  return n.kind == PickleKind::kInt || n.kind == PickleKind::kBool ? n.i : 0;
}

inline double PickleValue::real() const {
  const PickleNode& n = node();
  return n.kind == PickleKind::kFloat ? std::bit_cast<double>(n.i) : 0.0;
}

inline std::string_view PickleValue::str() const {
  const PickleNode& n = node();
  if (n.kind != PickleKind::kStr) return {};
  return {reinterpret_cast<const char*>(doc_->input) + n.first, n.count};
}

inline size_t PickleValue::size() const {
  const PickleNode& n = node();
  if (n.kind == PickleKind::kDict) return n.count / 2;
  return n.kind == PickleKind::kList || n.kind == PickleKind::kTuple ? n.count : 0;
}

inline PickleValue PickleValue::at(size_t i) const {
  return PickleValue(doc_, doc_->items[static_cast<size_t>(node().first) + i]);
}

inline std::optional<PickleValue> PickleValue::find(std::string_view key) const {
  if (kind() != PickleKind::kDict) return std::nullopt;
  for (size_t k = size(); k-- > 0;) {
    if (keyAt(k).str() == key) return valueAt(k);
  }
  return std::nullopt;
}

// Decodes one pickled value into a PickleDoc. Dict keys must be strings and integers must fit in
// 64 bits. Errors: "PATH: offset N: why" (for a refused opcode, "opcode GLOBAL (0x63) ...
// refused"). Trailing bytes after STOP are ignored, as pickle does. Containers hold at most
// min_value_nodes + value_nodes_per_byte * size elements in all.
base::StatusOr<PickleDoc> decodePickle(const void* data, size_t size, const std::string& path,
                                       const PickleLimits& limits = {});
// The same into `doc`, whose memory is reused; on failure *doc holds no value to read.
base::Status decodePickleInto(const void* data, size_t size, const std::string& path,
                              PickleDoc* doc, const PickleLimits& limits = {});

// Reads one pickled value as JSON (decodePickle, then expanded): tuples become JSON arrays,
// None becomes null. A value that holds itself or expands (shared references) past the limits
// is refused ("PATH: why").
base::StatusOr<nlohmann::json> parsePickle(const void* data, size_t size, const std::string& path,
                                           const PickleLimits& limits = {});

// True when `bytes` starts like a pickle of protocol 2 to 5 (PROTO opcode).
bool looksLikePickle(std::string_view bytes);

}  // namespace ncclrec::format
