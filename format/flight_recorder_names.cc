// flight_recorder_names.h: names inside a Flight Recorder dump, as ProcessGroupNCCL writes them.
#include "format/flight_recorder_names.h"

#include <charconv>
#include <map>

namespace ncclrec::format::fr {

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

// "[0, 1, 2]" -> {0, 1, 2}; nullopt when the text is not such a list.
std::optional<std::vector<int>> parseRanks(std::string_view text) {
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
int dtypeCode(std::string_view name) {
  static const std::map<std::string_view, int> kTable = {
      {"Char", 0},     {"Byte", 1},           {"Bool", 1},        {"Int", 2},
      {"Long", 4},     {"Half", 6},           {"Float", 7},       {"Double", 8},
      {"BFloat16", 9}, {"Float8_e4m3fn", 10}, {"Float8_e5m2", 11}};
  const auto it = kTable.find(name);
  return it == kTable.end() ? -1 : it->second;
}

// "nccl:all_reduce", "gloo:broadcast", "nccl:send 0->1", "nccl:recv 1<-0", "nccl:coalesced".
ParsedName parseProfilingName(std::string_view profiling) {
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

}  // namespace ncclrec::format::fr
