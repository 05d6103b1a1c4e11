// Flight Recorder dumps -> model (flight_recorder.h). Field names and meanings were learned from
// PyTorch's FlightRecorder sources (format versions 2.2 to 2.10); fields are tested for, never
// assumed from the version string, and unknown fields are ignored.
#include "recorder/format/flight_recorder.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "recorder/format/pickle_reader.h"

namespace ncclrec::format {
namespace {

using Json = nlohmann::json;

// FNV-1a of the group's name: the comm id every rank of the group computes alike. Never 0 (the
// model's "no communicator").
uint64_t commIdOf(const std::string& pg_name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : std::string("torch-pg:") + pg_name) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h == 0 ? 1 : h;
}

// Integers are numbers in the pickle and sometimes strings in the JSON form (pg_status).
std::optional<int64_t> asInt(const Json& j) {
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && end == s.data() + s.size()) return v;
  }
  return std::nullopt;
}

int64_t intField(const Json& obj, const char* key, int64_t fallback) {
  const auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  return asInt(*it).value_or(fallback);
}

std::string stringField(const Json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// "[0, 1, 2]" -> {0, 1, 2}; nullopt when the text is not such a list.
std::optional<std::vector<int>> parseRanks(const std::string& text) {
  std::vector<int> out;
  size_t i = 0;
  const auto blanks = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
  };
  blanks();
  if (i >= text.size() || text[i] != '[') return std::nullopt;
  ++i;
  for (blanks(); i < text.size() && text[i] != ']'; blanks()) {
    int v = 0;
    const auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), v);
    if (ec != std::errc() || v < 0) return std::nullopt;
    out.push_back(v);
    i = static_cast<size_t>(end - text.data());
  }
  if (i >= text.size()) return std::nullopt;
  return out;
}

// ncclDataType_t of a c10 ScalarType name, as ProcessGroupNCCL maps them; -1 when unknown.
int dtypeCode(const std::string& name) {
  static const std::map<std::string, int, std::less<>> kTable = {
      {"Char", 0},     {"Byte", 1},           {"Bool", 1},        {"Int", 2},
      {"Long", 4},     {"Half", 6},           {"Float", 7},       {"Double", 8},
      {"BFloat16", 9}, {"Float8_e4m3fn", 10}, {"Float8_e5m2", 11}};
  const auto it = kTable.find(name);
  return it == kTable.end() ? -1 : it->second;
}

struct ParsedName {
  OpType op = OpType::kUnknown;
  bool coalesced_marker = false;
  int peer = -1;  // send/recv: the group-local peer
};

// "nccl:all_reduce", "gloo:broadcast", "nccl:send 0->1", "nccl:recv 1<-0", "nccl:coalesced".
ParsedName parseProfilingName(const std::string& profiling) {
  ParsedName out;
  std::string_view s = profiling;
  if (const size_t colon = s.find(':'); colon != std::string_view::npos) s.remove_prefix(colon + 1);
  const size_t space = s.find(' ');
  const std::string_view verb = s.substr(0, space);
  static const std::map<std::string_view, OpType> kOps = {
      {"all_reduce", OpType::kAllReduce},
      {"allreduce_coalesced", OpType::kAllReduce},
      {"barrier", OpType::kAllReduce},
      {"broadcast", OpType::kBroadcast},
      {"reduce", OpType::kReduce},
      {"all_gather", OpType::kAllGather},
      {"_allgather_base", OpType::kAllGather},
      {"all_gather_into_tensor_coalesced", OpType::kAllGather},
      {"allgather_into_tensor_coalesced", OpType::kAllGather},
      {"reduce_scatter", OpType::kReduceScatter},
      {"_reduce_scatter_base", OpType::kReduceScatter},
      {"reduce_scatter_tensor_coalesced", OpType::kReduceScatter},
      {"all_to_all", OpType::kAlltoAll},
      {"all_to_allv", OpType::kAlltoAll},
      {"alltoall", OpType::kAlltoAll},
      {"alltoall_base", OpType::kAlltoAll},
      {"gather", OpType::kGather},
      {"scatter", OpType::kScatter},
      {"send", OpType::kSend},
      {"recv", OpType::kRecv}};
  if (verb == "coalesced") {
    out.coalesced_marker = true;
    return out;
  }
  if (const auto it = kOps.find(verb); it != kOps.end()) out.op = it->second;
  if (isP2p(out.op) && space != std::string_view::npos) {
    std::string_view peers = s.substr(space + 1);  // "0->1" or "1<-0": own rank, then the peer
    const size_t arrow = peers.find(out.op == OpType::kSend ? "->" : "<-");
    if (arrow != std::string_view::npos) {
      peers.remove_prefix(arrow + 2);
      int v = -1;
      std::from_chars(peers.data(), peers.data() + peers.size(), v);
      out.peer = v;
    }
  }
  return out;
}

// Elements of the first tensor of a "[[d0, d1], [d0]]" sizes list (1 for a scalar tensor).
uint64_t firstTensorElements(const Json& sizes) {
  if (!sizes.is_array() || sizes.empty() || !sizes.front().is_array()) return 0;
  uint64_t n = 1;
  for (const Json& d : sizes.front())
    n *= static_cast<uint64_t>(std::max<int64_t>(0, asInt(d).value_or(0)));
  return n;
}

class Converter {
 public:
  Converter(const std::string& path, int global_rank) : path_(path), global_rank_(global_rank) {}
  StatusOr<RankData> run(const Json& dump);

 private:
  Status fail(const std::string& why) const { return Status::error(path_ + ": " + why); }
  Status readGroups(const Json& pg_config);
  Status readEntry(const Json& e, size_t position);
  uint32_t internStack(const Json& frames);
  void markCoalesced();

  const std::string& path_;
  int global_rank_;
  RankData out_;
  std::map<std::string, size_t> comm_of_pg_;               // pg name -> index in out_.comms
  std::vector<std::pair<uint64_t, int64_t>> event_group_;  // per event: (comm, collective seq)
  std::set<std::pair<uint64_t, int64_t>> coalesced_;       // the same, of each end marker
  std::map<std::tuple<uint64_t, int, bool>, uint64_t> p2p_seq_;
  std::map<std::string, uint32_t> stack_ids_;
};

Status Converter::readGroups(const Json& pg_config) {
  if (!pg_config.is_object()) return fail("pg_config is not a dict");
  for (const auto& [key, pg] : pg_config.items()) {
    if (!pg.is_object()) return fail("pg_config[" + key + "] is not a dict");
    const std::optional<std::vector<int>> ranks = parseRanks(stringField(pg, "ranks"));
    if (!ranks) return fail("pg_config[" + key + "].ranks is not a list of ranks");
    for (int r : *ranks) out_.world_size = std::max(out_.world_size, r + 1);
    Comm c;
    c.index = static_cast<uint32_t>(out_.comms.size());
    c.comm_id = commIdOf(key);
    c.global_rank = global_rank_;
    c.nranks = static_cast<int>(ranks->size());
    const auto me = std::find(ranks->begin(), ranks->end(), global_rank_);
    c.rank = me == ranks->end() ? -1 : static_cast<int>(me - ranks->begin());
    const std::string desc = stringField(pg, "desc");
    c.name = desc.empty() || desc == key ? key : key + " (" + desc + ")";
    comm_of_pg_.emplace(key, out_.comms.size());
    out_.comms.push_back(std::move(c));
  }
  return okStatus();
}

uint32_t Converter::internStack(const Json& frames) {
  Stack s;
  std::string key;
  for (const Json& f : frames) {
    if (!f.is_object()) continue;
    Frame fr;
    fr.python = true;
    fr.function = stringField(f, "name");
    fr.file = stringField(f, "filename");
    fr.line = static_cast<int>(intField(f, "line", 0));
    key += fr.function + '\0' + fr.file + '\0' + std::to_string(fr.line) + '\n';
    s.frames.push_back(std::move(fr));
  }
  const auto [it, inserted] = stack_ids_.emplace(key, static_cast<uint32_t>(stack_ids_.size()));
  if (inserted) {
    s.id = it->second;
    s.symbolized = true;
    out_.stacks.emplace(s.id, std::move(s));
  }
  return it->second;
}

Status Converter::readEntry(const Json& e, size_t position) {
  const auto bad = [&](const std::string& why) {
    return fail("entry " + std::to_string(position) + ": " + why);
  };
  if (!e.is_object()) return bad("not a dict");
  const ParsedName name = parseProfilingName(stringField(e, "profiling_name"));
  std::string pg_name;
  if (const auto it = e.find("process_group");
      it != e.end() && it->is_array() && !it->empty() && it->front().is_string()) {
    pg_name = it->front().get<std::string>();
  }
  const auto cit = comm_of_pg_.find(pg_name);
  if (cit == comm_of_pg_.end()) return bad("process group '" + pg_name + "' is not in pg_config");
  const Comm& comm = out_.comms[cit->second];
  const int64_t seq = intField(e, "collective_seq_id", 0);
  if (name.coalesced_marker) {
    // From format 2.7 the ops of a coalesced group precede their marker, sharing its seq.
    coalesced_.insert({comm.comm_id, seq});
    return okStatus();
  }
  EventRecord ev;
  ev.index = out_.events.size();
  ev.op = name.op;
  ev.comm_id = comm.comm_id;
  ev.comm_index = comm.index;
  ev.rank = comm.rank;
  ev.nranks = comm.nranks;
  const std::string state = stringField(e, "state");
  ev.state = state == "completed" ? EventState::kCompleted
             : state == "started" ? EventState::kStarted
                                  : EventState::kEnqueued;
  if (isP2p(ev.op)) {
    ev.peer = name.peer;
    ev.op_seq = ++p2p_seq_[{comm.comm_id, name.peer, ev.op == OpType::kSend}];
  } else {
    ev.op_seq = static_cast<uint64_t>(std::max<int64_t>(0, seq));
  }
  const Json* sizes = nullptr;
  if (const auto it = e.find(ev.op == OpType::kReduceScatter ? "output_sizes" : "input_sizes");
      it != e.end()) {
    sizes = &*it;
  }
  ev.count = sizes != nullptr ? firstTensorElements(*sizes) : 0;
  if (const auto it = e.find("input_dtypes");
      it != e.end() && it->is_array() && !it->empty() && it->front().is_string()) {
    ev.dtype = dtypeCode(it->front().get<std::string>());
  }
  ev.enqueue_ns = intField(e, "time_created_ns", 0);
  ev.start_ns = intField(e, "time_discovered_started_ns", 0);  // null (pickle) or 0 (JSON)
  ev.end_ns = intField(e, "time_discovered_completed_ns", 0);
  ev.tid = static_cast<uint32_t>(intField(e, "thread_id", 0));
  if (const auto it = e.find("frames"); it != e.end() && it->is_array())
    ev.stack_id = internStack(*it);
  out_.dump_ns = std::max({out_.dump_ns, ev.enqueue_ns, ev.start_ns, ev.end_ns});
  out_.events.push_back(ev);
  event_group_.emplace_back(comm.comm_id, seq);
  return okStatus();
}

void Converter::markCoalesced() {
  for (size_t i = 0; i < out_.events.size(); ++i) {
    if (coalesced_.contains(event_group_[i])) out_.events[i].group_depth = 1;
  }
}

StatusOr<RankData> Converter::run(const Json& dump) {
  if (!dump.is_object() || !dump.contains("version") || !dump.contains("pg_config")) {
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
  NCCLREC_RETURN_IF_ERROR(readGroups(dump["pg_config"]));
  const Json& v = dump["version"];
  std::string detail =
      "PyTorch Flight Recorder dump, version " + (v.is_string() ? v.get<std::string>() : v.dump());
  if (const std::string lib = stringField(dump, "comm_lib_version"); !lib.empty()) {
    detail += ", comm lib " + lib;
  } else if (const std::string nccl = stringField(dump, "nccl_version"); !nccl.empty()) {
    detail += ", NCCL " + nccl;
  }
  out_.dump_detail = std::move(detail);
  const auto entries = dump.find("entries");  // the JSON form omits it when empty
  if (entries != dump.end() && !entries->is_array()) return fail("entries is not a list");
  std::vector<std::pair<int64_t, const Json*>> order;  // (record_id, entry)
  if (entries != dump.end()) {
    order.reserve(entries->size());
    for (const Json& e : *entries) {
      order.emplace_back(e.is_object() ? intField(e, "record_id", 0) : 0, &e);
    }
  }
  // Ring order is oldest first already; record_id (process-wide) makes it explicit.
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < order.size(); ++i) {
    NCCLREC_RETURN_IF_ERROR(readEntry(*order[i].second, i));
  }
  markCoalesced();
  const int64_t first_id = order.empty() ? 0 : order.front().first;
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

StatusOr<nlohmann::json> parseFlightRecorderJson(std::string_view bytes, const std::string& path) {
  constexpr size_t kMaxDepth = 64;
  if (const std::optional<size_t> at = tooDeep(bytes, kMaxDepth)) {
    return Status::error(path + ": offset " + std::to_string(*at) + ": JSON nested deeper than " +
                         std::to_string(kMaxDepth));
  }
  try {
    return Json::parse(bytes.begin(), bytes.end());
  } catch (const Json::parse_error& e) {
    const size_t at = e.byte > 0 ? e.byte - 1 : 0;
    return Status::error(path + ": offset " + std::to_string(at) + ": not valid JSON");
  } catch (const Json::exception&) {
    return Status::error(path + ": not valid JSON");
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

StatusOr<RankData> parseFlightRecorder(const void* data, size_t size, const std::string& path,
                                       int global_rank) {
  const std::string_view bytes(static_cast<const char*>(data), size);
  Json dump;
  if (looksLikePickle(bytes)) {
    NCCLREC_ASSIGN_OR_RETURN(dump, parsePickle(data, size, path));
  } else {
    NCCLREC_ASSIGN_OR_RETURN(dump, parseFlightRecorderJson(bytes, path));
  }
  return flightRecorderToModel(dump, path, global_rank);
}

StatusOr<RankData> flightRecorderToModel(const nlohmann::json& dump, const std::string& path,
                                         int global_rank) {
  try {
    Converter c(path, global_rank);
    return c.run(dump);
  } catch (const nlohmann::json::exception& e) {
    return Status::error(path + ": unexpected value in a Flight Recorder dump (" + e.what() + ")");
  }
}

}  // namespace ncclrec::format
