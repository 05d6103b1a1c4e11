// The two forms of a Flight Recorder dump read alike by flight_recorder.cc's converter: a decoded
// pickle (PickleValue, pickle_reader.h) and the debug server's JSON (JsonRef over nlohmann's
// document). Internal to the format library; both offer the same small interface:
//   isDict() isSequence() isString() isInt() integer() str() size() at(i) find(key) text()
// and forEachPair(value, fn(key, value)) over a dict. entryOf finds an entry's fields in one pass
// over its keys.
#pragma once

#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/pickle_reader.h"

namespace ncclrec::format::fr {

class JsonRef {
 public:
  explicit JsonRef(const nlohmann::json& j) : j_(&j) {}
  bool isDict() const { return j_->is_object(); }
  bool isSequence() const { return j_->is_array(); }
  bool isString() const { return j_->is_string(); }
  bool isInt() const { return j_->is_number_integer(); }
  int64_t integer() const { return isInt() ? j_->get<int64_t>() : 0; }
  std::string_view str() const {
    return isString() ? std::string_view(j_->get_ref<const std::string&>()) : std::string_view();
  }
  size_t size() const { return isDict() || isSequence() ? j_->size() : 0; }
  JsonRef at(size_t i) const { return JsonRef((*j_)[i]); }
  std::optional<JsonRef> find(std::string_view key) const {
    if (!isDict()) return std::nullopt;
    const auto it = j_->find(std::string(key));
    return it == j_->end() ? std::nullopt : std::optional<JsonRef>(JsonRef(*it));
  }
  // The value as text: a string as it is, anything else as JSON.
  std::string text() const { return isString() ? std::string(str()) : j_->dump(); }
  template <class F>
  friend void forEachPair(JsonRef dict, F&& fn) {
    for (const auto& [key, value] : dict.j_->items()) fn(std::string_view(key), JsonRef(value));
  }

 private:
  const nlohmann::json* j_;
};

template <class F>
void forEachPair(PickleValue dict, F&& fn) {
  for (size_t k = 0; k < dict.size(); ++k) fn(dict.keyAt(k).str(), dict.valueAt(k));
}

// The value as text: a string as it is, a number in decimal.
inline std::string text(PickleValue v) {
  if (v.isString()) return std::string(v.str());
  if (v.isInt()) return std::to_string(v.integer());
  if (v.kind() == PickleKind::kFloat) return std::to_string(v.real());
  return "?";
}
inline std::string text(JsonRef v) { return v.text(); }

// Integers are numbers in the pickle and sometimes strings in the JSON form (pg_status).
template <class V>
[[gnu::always_inline]] inline std::optional<int64_t> asInt(V v) {
  if (v.isInt()) return v.integer();
  if (v.isString()) {
    const std::string_view s = v.str();
    int64_t out = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec == std::errc() && end == s.data() + s.size()) return out;
  }
  return std::nullopt;
}

template <class V>
int64_t intField(V obj, std::string_view key, int64_t fallback) {
  const std::optional<V> v = obj.find(key);
  return v ? asInt(*v).value_or(fallback) : fallback;
}

template <class V>
std::string_view stringField(V obj, std::string_view key) {
  const std::optional<V> v = obj.find(key);
  return v ? v->str() : std::string_view();
}

// The entry fields the conversion reads, found in one pass over the entry's keys.
enum Field : uint8_t {
  kProfilingName,
  kProcessGroup,
  kCollectiveSeq,
  kState,
  kInputSizes,
  kOutputSizes,
  kInputDtypes,
  kCreated,
  kStarted,
  kCompleted,
  kThreadId,
  kFrames,
  kRecordId,
  kFieldCount,
  kOther = kFieldCount
};

inline Field fieldOf(std::string_view key) {
  static constexpr std::string_view kNames[kFieldCount] = {"profiling_name",
                                                           "process_group",
                                                           "collective_seq_id",
                                                           "state",
                                                           "input_sizes",
                                                           "output_sizes",
                                                           "input_dtypes",
                                                           "time_created_ns",
                                                           "time_discovered_started_ns",
                                                           "time_discovered_completed_ns",
                                                           "thread_id",
                                                           "frames",
                                                           "record_id"};
  for (uint8_t f = 0; f < kFieldCount; ++f) {
    if (kNames[f].size() == key.size() && kNames[f] == key) return static_cast<Field>(f);
  }
  return kOther;
}

// An entry's fields (the last of a key wins, as in Python). The JSON form's.
template <class V>
struct Entry {
  bool dict = false;  // false when the entry is not a dict
  std::array<std::optional<V>, kFieldCount> fields;
  std::optional<V> field(Field f) const { return fields[f]; }
  int64_t intOf(Field f, int64_t fallback) const {
    return fields[f] ? asInt(*fields[f]).value_or(fallback) : fallback;
  }
  std::string_view stringOf(Field f) const { return fields[f] ? fields[f]->str() : ""; }
};

// A pickle's: node indexes, 64 bytes in all (a dump's entries are all held at once).
template <>
struct Entry<PickleValue> {
  static constexpr uint32_t kAbsent = std::numeric_limits<uint32_t>::max();
  const PickleDoc* doc = nullptr;  // nullptr when the entry is not a dict
  bool dict = false;
  std::array<uint32_t, kFieldCount> nodes;
  Entry() { nodes.fill(kAbsent); }
  std::optional<PickleValue> field(Field f) const {
    if (nodes[f] == kAbsent) return std::nullopt;
    return PickleValue(doc, nodes[f]);
  }
  int64_t intOf(Field f, int64_t fallback) const {
    return nodes[f] == kAbsent ? fallback : asInt(PickleValue(doc, nodes[f])).value_or(fallback);
  }
  std::string_view stringOf(Field f) const {
    return nodes[f] == kAbsent ? "" : PickleValue(doc, nodes[f]).str();
  }
};

// fieldOf with a memory for pickles: torch's and Python's picklers write each key string once and
// refer back to it, so every entry's keys are the same few nodes, each looked up once.
class FieldCache {
 public:
  Field of(PickleValue key) {
    const uint32_t id = key.id();
    if (id >= known_.size()) known_.resize(static_cast<size_t>(id) + 1, kUnknown);
    if (known_[id] == kUnknown) known_[id] = fieldOf(key.str());
    return static_cast<Field>(known_[id]);
  }

 private:
  static constexpr uint8_t kUnknown = 0xff;
  std::vector<uint8_t> known_;  // by node id
};

// A value computed from a string once per string node of a pickle (a pickler writes each
// distinct string once and refers back to it, so an entry's profiling name, group and dtype are
// a few nodes met again and again); computed every time from JSON. Direct-mapped: a slot that two
// nodes share is computed again, never wrong.
template <class T>
class ByString {
 public:
  template <class F>
  T get(PickleValue s, F&& make) {
    Slot& slot = slots_[s.id() % kSlots];
    if (slot.id != s.id()) {
      slot.value = make(s.str());
      slot.id = s.id();
    }
    return slot.value;
  }
  template <class F>
  T get(JsonRef s, F&& make) {
    return make(s.str());
  }

 private:
  static constexpr size_t kSlots = 64;
  struct Slot {
    uint32_t id = std::numeric_limits<uint32_t>::max();  // no node has it
    T value{};
  };
  std::array<Slot, kSlots> slots_{};
};

inline Entry<PickleValue> entryOf(PickleValue e, FieldCache& cache) {
  Entry<PickleValue> out;
  if (!e.isDict()) return out;
  out.doc = e.doc();
  out.dict = true;
  for (size_t k = 0; k < e.size(); ++k) {
    // The last one wins, as in Python.
    if (const Field f = cache.of(e.keyAt(k)); f != kOther) out.nodes[f] = e.valueAt(k).id();
  }
  return out;
}

inline Entry<JsonRef> entryOf(JsonRef e, FieldCache&) {
  Entry<JsonRef> out;
  if (!e.isDict()) return out;
  out.dict = true;
  forEachPair(e, [&](std::string_view key, JsonRef value) {
    if (const Field f = fieldOf(key); f != kOther) out.fields[f] = value;
  });
  return out;
}

}  // namespace ncclrec::format::fr
