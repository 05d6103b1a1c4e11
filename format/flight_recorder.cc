// Flight Recorder dumps -> model (flight_recorder.h). Field names and meanings were learned from
// PyTorch's FlightRecorder sources (format versions 2.2 to 2.10); fields are tested for, never
// assumed from the version string, and unknown fields are ignored.
#include "format/flight_recorder.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "format/flight_recorder_names.h"
#include "format/flight_recorder_values.h"
#include "format/pickle_reader.h"

namespace ncclrec::format {
namespace {

using fr::asInt;
using fr::commIdOf;
using fr::dtypeCode;
using fr::Entry;
using fr::entryOf;
using fr::forEachPair;
using fr::intField;
using fr::ParsedName;
using fr::parseProfilingName;
using fr::parseRanks;
using fr::stringField;
using fr::text;

using Json = nlohmann::json;

// Elements of the first tensor of a "[[d0, d1], [d0]]" sizes list (1 for a scalar tensor).
template <class V>
uint64_t firstTensorElements(V sizes) {
  if (!sizes.isSequence() || sizes.size() == 0 || !sizes.at(0).isSequence()) return 0;
  const V first = sizes.at(0);
  uint64_t n = 1;
  for (size_t k = 0; k < first.size(); ++k)
    n *= static_cast<uint64_t>(std::max<int64_t>(0, asInt(first.at(k)).value_or(0)));
  return n;
}

// FNV-1a over the words of a stack's key (internStack), in four independent lanes.
struct WordsHash {
  size_t operator()(const std::vector<uint64_t>& words) const {
    constexpr uint64_t kPrime = 0x100000001b3ull;
    uint64_t h[4] = {0xcbf29ce484222325ull, 1, 2, words.size()};
    for (size_t k = 0; k < words.size(); ++k) h[k % 4] = (h[k % 4] ^ words[k]) * kPrime;
    return static_cast<size_t>(h[0] ^ std::rotl(h[1], 16) ^ std::rotl(h[2], 32) ^
                               std::rotl(h[3], 48));
  }
};

template <class V>
class Converter {
 public:
  Converter(const std::string& path, int global_rank) : path_(path), global_rank_(global_rank) {}
  base::StatusOr<RankData> run(V dump);

 private:
  base::Status fail(const std::string& why) const {
    return base::Status::error(path_ + ": " + why);
  }
  base::Status readGroups(V pg_config);
  base::Status readEntry(const Entry<V>& e, size_t position);
  uint32_t internStack(V frames);
  uint32_t internStackByText(V frames);
  void markCoalesced();

  const std::string& path_;
  int global_rank_;
  RankData out_;
  std::map<std::string, size_t, std::less<>> comm_of_pg_;  // pg name -> index in out_.comms
  std::vector<std::pair<uint64_t, int64_t>> event_group_;  // per event: (comm, collective seq)
  std::set<std::pair<uint64_t, int64_t>> coalesced_;       // the same, of each end marker
  std::map<std::tuple<uint64_t, int, bool>, uint64_t> p2p_seq_;
  std::map<std::string, uint32_t, std::less<>> stack_ids_;
  std::string stack_key_;               // reused by internStackByText
  std::vector<uint64_t> ids_key_;       // reused by internStack
  std::vector<uint64_t> last_ids_key_;  // internStack's previous key and its stack
  uint32_t last_stack_id_ = 0;
  std::unordered_map<std::vector<uint64_t>, uint32_t, WordsHash> stack_of_ids_;
  // By string node (pickles): the parsed profiling name, the comm (index in out_.comms, or
  // npos), the state and the dtype code.
  fr::ByString<ParsedName> names_;
  fr::ByString<size_t> comm_by_name_;
  fr::ByString<EventState> states_;
  fr::ByString<int> dtypes_;
};

template <class V>
base::Status Converter<V>::readGroups(V pg_config) {
  if (!pg_config.isDict()) return fail("pg_config is not a dict");
  base::Status status = base::okStatus();
  forEachPair(pg_config, [&](std::string_view key_view, V pg) {
    if (!status.ok()) return;
    const std::string key(key_view);
    if (!pg.isDict()) {
      status = fail("pg_config[" + key + "] is not a dict");
      return;
    }
    const std::optional<std::vector<int>> ranks = parseRanks(stringField(pg, "ranks"));
    if (!ranks) {
      status = fail("pg_config[" + key + "].ranks is not a list of ranks");
      return;
    }
    for (int r : *ranks) out_.world_size = std::max(out_.world_size, r + 1);
    Comm c;
    c.index = static_cast<uint32_t>(out_.comms.size());
    c.comm_id = commIdOf(key);
    c.global_rank = global_rank_;
    c.nranks = static_cast<int>(ranks->size());
    const auto me = std::find(ranks->begin(), ranks->end(), global_rank_);
    c.rank = me == ranks->end() ? -1 : static_cast<int>(me - ranks->begin());
    const std::string_view desc = stringField(pg, "desc");
    c.name = desc.empty() || desc == key ? key : key + " (" + std::string(desc) + ")";
    comm_of_pg_.emplace(key, out_.comms.size());
    out_.comms.push_back(std::move(c));
  });
  return status;
}

// Frames are looked up by their text first: a stack seen before costs no allocation.
template <class V>
uint32_t Converter<V>::internStack(V frames) {
  if constexpr (std::is_same_v<V, PickleValue>) {
    // Memoized strings: the same frames are the same key and value nodes, found without reading
    // them. Each frame is its number of pairs, then its (key node, value) pairs in order: the
    // same sequence is the same text (a different one may still be, and is found by text).
    ids_key_.clear();
    for (size_t k = 0; k < frames.size(); ++k) {
      const V f = frames.at(k);
      if (!f.isDict()) continue;
      ids_key_.push_back(f.size());
      for (size_t i = 0; i < f.size(); ++i) {
        const V v = f.valueAt(i);
        ids_key_.push_back(f.keyAt(i).id());
        // An integer (the line) and a node never share a key: odd and even.
        ids_key_.push_back(v.isInt() ? static_cast<uint64_t>(v.integer()) << 1 | 1
                                     : uint64_t{v.id()} << 1);
      }
    }
    // Most entries repeat the stack of the one before: no hashing then.
    if (ids_key_ == last_ids_key_) return last_stack_id_;
    const auto it = stack_of_ids_.find(ids_key_);
    const uint32_t id = it != stack_of_ids_.end() ? it->second : internStackByText(frames);
    if (it == stack_of_ids_.end()) stack_of_ids_.emplace(ids_key_, id);
    last_ids_key_ = ids_key_;
    last_stack_id_ = id;
    return id;
  }
  return internStackByText(frames);
}

template <class V>
uint32_t Converter<V>::internStackByText(V frames) {
  stack_key_.clear();
  for (size_t k = 0; k < frames.size(); ++k) {
    const V f = frames.at(k);
    if (!f.isDict()) continue;
    stack_key_ += stringField(f, "name");
    stack_key_ += '\0';
    stack_key_ += stringField(f, "filename");
    stack_key_ += '\0';
    stack_key_ += std::to_string(intField(f, "line", 0));
    stack_key_ += '\n';
  }
  if (const auto it = stack_ids_.find(stack_key_); it != stack_ids_.end()) return it->second;
  Stack s;
  s.id = static_cast<uint32_t>(stack_ids_.size());
  s.symbolized = true;
  for (size_t k = 0; k < frames.size(); ++k) {
    const V f = frames.at(k);
    if (!f.isDict()) continue;
    Frame fr;
    fr.python = true;
    fr.function = stringField(f, "name");
    fr.file = stringField(f, "filename");
    fr.line = static_cast<int>(intField(f, "line", 0));
    s.frames.push_back(std::move(fr));
  }
  stack_ids_.emplace(stack_key_, s.id);
  const uint32_t id = s.id;
  out_.stacks.emplace(id, std::move(s));
  return id;
}

template <class V>
base::Status Converter<V>::readEntry(const Entry<V>& e, size_t position) {
  const auto bad = [&](const std::string& why) {
    return fail("entry " + std::to_string(position) + ": " + why);
  };
  if (!e.dict) return bad("not a dict");
  const std::optional<V> profiling = e.field(fr::kProfilingName);
  const ParsedName name = profiling ? names_.get(*profiling, parseProfilingName) : ParsedName();
  const std::optional<V> pg = e.field(fr::kProcessGroup);
  const bool has_pg = pg && pg->isSequence() && pg->size() > 0 && pg->at(0).isString();
  constexpr size_t kNoComm = std::string::npos;
  const auto commOf = [&](std::string_view pg_name) {
    const auto it = comm_of_pg_.find(pg_name);
    return it == comm_of_pg_.end() ? kNoComm : it->second;
  };
  const size_t comm_index = has_pg ? comm_by_name_.get(pg->at(0), commOf) : commOf("");
  if (comm_index == kNoComm) {
    return bad("process group '" + std::string(has_pg ? pg->at(0).str() : "") +
               "' is not in pg_config");
  }
  const Comm& comm = out_.comms[comm_index];
  const int64_t seq = e.intOf(fr::kCollectiveSeq, 0);
  if (name.coalesced_marker) {
    // From format 2.7 the ops of a coalesced group precede their marker, sharing its seq.
    coalesced_.insert({comm.comm_id, seq});
    return base::okStatus();
  }
  EventFields ev;
  ev.index = out_.events.size();
  ev.op = name.op;
  ev.comm_id = comm.comm_id;
  ev.comm_index = comm.index;
  ev.rank = comm.rank;
  ev.nranks = comm.nranks;
  const auto stateOf = [](std::string_view state) {
    return state == "completed" ? EventState::kCompleted
           : state == "started" ? EventState::kStarted
                                : EventState::kEnqueued;
  };
  const std::optional<V> state = e.field(fr::kState);
  ev.state = state ? states_.get(*state, stateOf) : EventState::kEnqueued;
  if (isP2p(ev.op)) {
    ev.peer = name.peer;
    ev.op_seq = ++p2p_seq_[{comm.comm_id, name.peer, ev.op == OpType::kSend}];
  } else {
    ev.op_seq = static_cast<uint64_t>(std::max<int64_t>(0, seq));
  }
  if (const std::optional<V> sizes =
          e.field(ev.op == OpType::kReduceScatter ? fr::kOutputSizes : fr::kInputSizes))
    ev.count = firstTensorElements(*sizes);
  if (const std::optional<V> dtypes = e.field(fr::kInputDtypes);
      dtypes && dtypes->isSequence() && dtypes->size() > 0 && dtypes->at(0).isString()) {
    ev.dtype = dtypes_.get(dtypes->at(0), dtypeCode);
  }
  ev.enqueue_ns = e.intOf(fr::kCreated, 0);
  ev.start_ns = e.intOf(fr::kStarted, 0);  // null (pickle) or 0 (JSON)
  ev.end_ns = e.intOf(fr::kCompleted, 0);
  ev.tid = static_cast<uint32_t>(e.intOf(fr::kThreadId, 0));
  if (const std::optional<V> frames = e.field(fr::kFrames); frames && frames->isSequence())
    ev.stack_id = internStack(*frames);
  out_.dump_ns = std::max({out_.dump_ns, ev.enqueue_ns, ev.start_ns, ev.end_ns});
  out_.events.emplace_back(ev);
  event_group_.emplace_back(comm.comm_id, seq);
  return base::okStatus();
}

template <class V>
void Converter<V>::markCoalesced() {
  if (coalesced_.empty()) return;
  for (size_t i = 0; i < out_.events.size(); ++i) {
    if (coalesced_.contains(event_group_[i])) out_.events[i].group_depth = 1;
  }
}

template <class V>
base::StatusOr<RankData> Converter<V>::run(V dump) {
  const std::optional<V> version = dump.find("version");
  const std::optional<V> pg_config = dump.find("pg_config");
  if (!dump.isDict() || !version || !pg_config) {
    return fail("not a PyTorch Flight Recorder dump (no version or pg_config)");
  }
  if (global_rank_ < 0) {
    return fail(
        "the file's name does not end in its rank (Flight Recorder names dumps "
        "<prefix><global rank>, e.g. nccl_trace_rank_3)");
  }
  out_.source = SourceKind::kDump;
  out_.global_rank = global_rank_;
  out_.world_size = global_rank_ + 1;
  NCCLREC_RETURN_IF_ERROR(readGroups(*pg_config));
  std::string detail = "PyTorch Flight Recorder dump, version " + text(*version);
  if (const std::string_view lib = stringField(dump, "comm_lib_version"); !lib.empty()) {
    detail += ", comm lib " + std::string(lib);
  } else if (const std::string_view nccl = stringField(dump, "nccl_version"); !nccl.empty()) {
    detail += ", NCCL " + std::string(nccl);
  }
  out_.dump_detail = std::move(detail);
  const std::optional<V> entries = dump.find("entries");  // the JSON form omits it when empty
  if (entries && !entries->isSequence()) return fail("entries is not a list");
  std::vector<Entry<V>> order;
  std::vector<int64_t> record_ids;
  if (entries) {
    fr::FieldCache fields;
    order.reserve(entries->size());
    record_ids.reserve(entries->size());
    for (size_t k = 0; k < entries->size(); ++k) {
      order.push_back(entryOf(entries->at(k), fields));
      record_ids.push_back(order.back().intOf(fr::kRecordId, 0));
    }
  }
  // Ring order is oldest first already; record_id (process-wide) makes it explicit.
  if (!std::is_sorted(record_ids.begin(), record_ids.end())) {
    std::vector<size_t> by_id(order.size());
    for (size_t k = 0; k < by_id.size(); ++k) by_id[k] = k;
    std::stable_sort(by_id.begin(), by_id.end(),
                     [&](size_t a, size_t b) { return record_ids[a] < record_ids[b]; });
    std::vector<Entry<V>> sorted;
    sorted.reserve(order.size());
    for (const size_t k : by_id) sorted.push_back(order[k]);
    order = std::move(sorted);
    std::sort(record_ids.begin(), record_ids.end());
  }
  out_.events.reserve(order.size());
  event_group_.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    NCCLREC_RETURN_IF_ERROR(readEntry(order[i], i));
  }
  markCoalesced();
  const int64_t first_id = record_ids.empty() ? 0 : record_ids.front();
  out_.events_lost = static_cast<uint64_t>(std::max<int64_t>(0, first_id));
  out_.events_total = out_.events_lost + out_.events.size();
  return std::move(out_);
}

// nlohmann's parser keeps its own stack, but a document nested a million deep is no dump: refuse
// it before parsing. Brackets inside strings do not count.
std::optional<size_t> tooDeep(std::string_view bytes, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

}  // namespace

base::StatusOr<nlohmann::json> parseFlightRecorderJson(std::string_view bytes,
                                                       const std::string& path) {
  constexpr size_t kMaxDepth = 64;
  if (const std::optional<size_t> at = tooDeep(bytes, kMaxDepth)) {
    return base::Status::error(path + ": offset " + std::to_string(*at) +
                               ": JSON nested deeper than " + std::to_string(kMaxDepth));
  }
  try {
    return Json::parse(bytes.begin(), bytes.end());
  } catch (const Json::parse_error& e) {
    const size_t at = e.byte > 0 ? e.byte - 1 : 0;
    return base::Status::error(path + ": offset " + std::to_string(at) + ": not valid JSON");
  } catch (const Json::exception&) {
    return base::Status::error(path + ": not valid JSON");
  }
}

bool looksLikeFlightRecorder(std::string_view prefix) {
  if (looksLikePickle(prefix)) return true;
  for (const char c : prefix) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    return c == '{';
  }
  return false;
}

int rankFromFileName(const std::string& path) {
  size_t end = path.size();
  size_t begin = end;
  while (begin > 0 && path[begin - 1] >= '0' && path[begin - 1] <= '9') --begin;
  if (begin == end || end - begin > 9) return -1;
  int v = -1;
  std::from_chars(path.data() + begin, path.data() + end, v);
  return v;
}

base::StatusOr<RankData> parseFlightRecorder(const void* data, size_t size, const std::string& path,
                                             int global_rank) {
  const std::string_view bytes(static_cast<const char*>(data), size);
  if (!looksLikePickle(bytes)) {
    NCCLREC_ASSIGN_OR_RETURN(const Json dump, parseFlightRecorderJson(bytes, path));
    return flightRecorderToModel(dump, path, global_rank);
  }
  // The pickle is converted from its decoded form directly: no JSON document in between. Each
  // thread decodes into one doc, file after file: its pages are touched once, not per file.
  // The doc of a file over 64 MiB is given back once converted.
  thread_local PickleDoc doc;
  base::Status decoded = decodePickleInto(data, size, path, &doc);
  std::optional<base::StatusOr<RankData>> out;
  if (decoded.ok()) {
    Converter<PickleValue> c(path, global_rank);
    out.emplace(c.run(doc.root()));
  }
  if (size > (64u << 20)) doc = PickleDoc();
  if (!out) return decoded;
  return std::move(*out);
}

base::StatusOr<RankData> flightRecorderToModel(const nlohmann::json& dump, const std::string& path,
                                               int global_rank) {
  try {
    Converter<fr::JsonRef> c(path, global_rank);
    return c.run(fr::JsonRef(dump));
  } catch (const nlohmann::json::exception& e) {
    return base::Status::error(path + ": unexpected value in a Flight Recorder dump (" + e.what() +
                               ")");
  }
}

}  // namespace ncclrec::format
