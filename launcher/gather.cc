#include "launcher/gather.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/proc_state.h"
#include "base/text.h"
#include "format/recording_files.h"

namespace ncclrec::launcher {
namespace {

using Json = nlohmann::ordered_json;

std::string chunkKey(const std::string& prefix, size_t file, size_t chunk) {
  return prefix + "f" + std::to_string(file) + "/c" + std::to_string(chunk);
}

// Only plain recording names are written: a manifest must never place a file outside `dir`.
bool isRecordingName(const std::string& name) {
  auto ends = [&](std::string_view tail) {
    return name.size() > tail.size() &&
           name.compare(name.size() - tail.size(), tail.size(), tail.data(), tail.size()) == 0;
  };
  return !name.empty() && name[0] != '.' && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos &&
         (ends(format::kDumpSuffix) || ends(format::kBboxSuffix));
}

// Manifest fields, read without ever throwing: a wrong type gives the fallback.
int64_t intField(const Json& j, const char* key, int64_t fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}
bool boolField(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}
std::string strField(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

base::StatusOr<uint64_t> sendRecordings(format::StoreClient& store, const std::string& prefix,
                                        int node_rank, const std::string& host,
                                        const std::vector<report::WorkerInfo>& workers,
                                        const std::vector<std::string>& paths,
                                        const std::function<void()>& after_chunk) {
  const std::string who = "node " + std::to_string(node_rank) + " (host " + host + ")";
  Json manifest;
  manifest["node"] = node_rank;
  manifest["host"] = host;
  manifest["workers"] = Json::array();
  for (const report::WorkerInfo& w : workers) {
    manifest["workers"].push_back(
        {{"rank", w.rank},
         {"local_rank", w.local_rank},
         {"pid", w.pid},
         {"running", w.running},
         {"ended", w.ended},
         {"stopped", w.stopped},
         {"process_state", w.process_state != 0 ? std::string(1, w.process_state) : ""},
         {"wchan", w.wchan}});
  }
  manifest["files"] = Json::array();
  manifest["warnings"] = Json::array();
  uint64_t sent = 0;
  for (const std::string& path : paths) {
    const std::string name = std::filesystem::path(path).filename().string();
    auto bytes = base::readFile(path);
    if (!bytes || !isRecordingName(name)) {
      manifest["warnings"].push_back(who + ": " + path + ": cannot be read, not sent");
      continue;
    }
    if (sent + bytes->size() > kMaxSendBytes) {
      manifest["warnings"].push_back(who + ": " + name + " (" + std::to_string(bytes->size()) +
                                     " bytes) not sent: over the " +
                                     std::to_string(kMaxSendBytes >> 20) + " MiB a node sends");
      continue;
    }
    const size_t index = manifest["files"].size();
    const size_t chunks = (bytes->size() + kChunkBytes - 1) / kChunkBytes;
    for (size_t c = 0; c < chunks; ++c) {
      NCCLREC_RETURN_IF_ERROR(
          store.set(chunkKey(prefix, index, c), bytes->substr(c * kChunkBytes, kChunkBytes)));
      if (after_chunk) after_chunk();
    }
    manifest["files"].push_back({{"name", name},
                                 {"size", bytes->size()},
                                 {"chunks", chunks},
                                 {"fnv1a64", base::hex16(fnv1a64(*bytes))}});
    sent += bytes->size();
  }
  NCCLREC_RETURN_IF_ERROR(store.set(prefix + "manifest",
                                    manifest.dump(-1, ' ', false, Json::error_handler_t::replace)));
  return sent;
}

base::StatusOr<std::optional<NodeRecordings>> receiveRecordings(format::StoreClient& store,
                                                                const std::string& prefix,
                                                                const std::string& dir) {
  auto text = store.tryGet(prefix + "manifest");
  if (!text.ok()) return text.status();
  if (!text->has_value()) return std::optional<NodeRecordings>();
  const Json m = Json::parse(**text, nullptr, false);
  auto bad = [&](const std::string& why) {
    return base::Status::error("cxxrun: the manifest at " + prefix + "manifest " + why);
  };
  if (!m.is_object() || intField(m, "node", -1) < 0 || !m.contains("workers") ||
      !m.at("workers").is_array() || !m.contains("files") || !m.at("files").is_array())
    return bad("does not parse");
  NodeRecordings out;
  out.node_rank = static_cast<int>(intField(m, "node", -1));
  out.host = strField(m, "host");
  const std::string who = "node " + std::to_string(out.node_rank) + " (host " + out.host + ")";
  for (const auto& w : m.at("workers")) {
    if (!w.is_object() || intField(w, "rank", -1) < 0) return bad("has a bad worker entry");
    report::WorkerInfo info;
    info.rank = static_cast<int>(intField(w, "rank", -1));
    info.local_rank = static_cast<int>(intField(w, "local_rank", -1));
    info.pid = static_cast<int>(intField(w, "pid", 0));
    info.running = boolField(w, "running");
    info.ended = strField(w, "ended");
    info.stopped = boolField(w, "stopped");
    // The proc(5) letter its agent read; anything else is unknown.
    if (const std::string state = strField(w, "process_state");
        state.size() == 1 && !base::processStateName(state[0]).empty()) {
      info.process_state = state[0];
      info.wchan = strField(w, "wchan");
    }
    info.node = out.node_rank;
    info.host = out.host;
    out.workers.push_back(std::move(info));
  }
  if (const auto it = m.find("warnings"); it != m.end() && it->is_array()) {
    for (const auto& w : *it)
      if (w.is_string()) out.warnings.push_back(w.get<std::string>());
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return base::Status::error("cxxrun: cannot create " + dir + ": " + ec.message());
  const Json& files = m.at("files");
  for (size_t i = 0; i < files.size(); ++i) {
    const Json& f = files[i];
    const std::string name = f.is_object() ? strField(f, "name") : "";
    const int64_t size = f.is_object() ? intField(f, "size", -1) : -1;
    const int64_t chunks = f.is_object() ? intField(f, "chunks", -1) : -1;
    const std::string sum = f.is_object() ? strField(f, "fnv1a64") : "";
    if (!isRecordingName(name) || size < 0 || static_cast<uint64_t>(size) > kMaxSendBytes ||
        chunks !=
            (size + static_cast<int64_t>(kChunkBytes) - 1) / static_cast<int64_t>(kChunkBytes)) {
      out.warnings.push_back(who + ": file " + std::to_string(i) + " ('" + name +
                             "'): bad manifest entry, skipped");
      continue;
    }
    std::string bytes;
    std::string why;
    for (size_t c = 0; c < static_cast<size_t>(chunks) && why.empty(); ++c) {
      auto chunk = store.tryGet(chunkKey(prefix, i, c));
      if (!chunk.ok()) return chunk.status();
      if (!chunk->has_value()) {
        why = "chunk " + std::to_string(c) + " of " + std::to_string(chunks) + " missing";
      } else {
        bytes += **chunk;
      }
      (void)store.remove(chunkKey(prefix, i, c));
    }
    if (why.empty() && bytes.size() != static_cast<uint64_t>(size))
      why = std::to_string(bytes.size()) + " bytes arrived, " + std::to_string(size) + " sent";
    if (why.empty() && base::hex16(fnv1a64(bytes)) != sum) why = "checksum mismatch";
    if (!why.empty()) {
      out.warnings.push_back(who + ": " + name + ": " + why + ", skipped");
      continue;
    }
    const std::string path = dir + "/" + name;
    const std::string tmp = path + ".tmp";
    {
      std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
      o.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!o) why = "cannot write " + tmp;
    }
    if (why.empty() && std::rename(tmp.c_str(), path.c_str()) != 0) why = "cannot write " + path;
    if (!why.empty()) {
      out.warnings.push_back(who + ": " + name + ": " + why);
      continue;
    }
    out.files.push_back(path);
  }
  (void)store.remove(prefix + "manifest");
  return std::optional<NodeRecordings>(std::move(out));
}

}  // namespace ncclrec::launcher
