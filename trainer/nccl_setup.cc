#include "trainer/nccl_setup.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "format/store_client.h"

namespace ncclrec::trainer {
namespace {

base::Status readEnvInt(const char* name, int min, int* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return base::okStatus();
  const std::string_view text(v);
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < min) {
    return base::Status::error(std::string(name) + "='" + v +
                               "' is not a whole number >= " + std::to_string(min));
  }
  *out = n;
  return base::okStatus();
}

}  // namespace

base::StatusOr<DistEnv> distEnvFromEnvironment() {
  DistEnv env;
  NCCLREC_RETURN_IF_ERROR(readEnvInt("RANK", 0, &env.rank));
  NCCLREC_RETURN_IF_ERROR(readEnvInt("WORLD_SIZE", 1, &env.world));
  NCCLREC_RETURN_IF_ERROR(readEnvInt("LOCAL_RANK", 0, &env.local_rank));
  if (env.rank >= env.world) {
    return base::Status::error("RANK=" + std::to_string(env.rank) +
                               " is not below WORLD_SIZE=" + std::to_string(env.world));
  }
  const char* store = std::getenv("CXXRUN_STORE");
  env.under_cxxrun = store != nullptr && *store != '\0';
  return env;
}

base::StatusOr<ncclUniqueId> shareUniqueId(const DistEnv& env, const std::string& id_file,
                                           double timeout_s) {
  ncclUniqueId id{};
  if (env.rank == 0) {
    const ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) {
      return base::Status::error(std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(r));
    }
  }
  if (env.world == 1) return id;
  if (env.under_cxxrun) {
    NCCLREC_RETURN_IF_ERROR(format::storeBroadcast("ncclrec-trainer/nccl_id", env.rank == 0, &id,
                                                   sizeof(id), timeout_s));
    return id;
  }
  if (id_file.empty()) {
    return base::Status::error(
        "WORLD_SIZE > 1 without cxxrun: pass --id-file PATH (a fresh path per run, visible to "
        "every rank) or start the job with cxxrun");
  }
  if (env.rank == 0) {
    const std::string tmp = id_file + ".tmp." + std::to_string(getpid());
    std::ofstream(tmp, std::ios::binary).write(id.internal, sizeof(id.internal));
    if (std::rename(tmp.c_str(), id_file.c_str()) != 0) {
      return base::Status::error("--id-file " + id_file + ": cannot publish the unique id");
    }
    return id;
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(timeout_s * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(id_file, std::ios::binary);
    if (in.read(id.internal, sizeof(id.internal))) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return base::Status::error("--id-file " + id_file + ": no unique id after " +
                             std::to_string(int(timeout_s)) + " s (is rank 0 running?)");
}

void checkNccl(ncclResult_t r, ncclComm_t comm, const char* what) {
  if (r == ncclSuccess) return;
  std::string message = std::string(what) + ": " + ncclGetErrorString(r);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') message += std::string(" (") + last + ")";
  throw NcclError(message);
}

std::string ncclLibraryDescription() {
  int version = 0;
  std::string text = "NCCL";
  if (ncclGetVersion(&version) == ncclSuccess) {
    text += " " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) +
            "." + std::to_string(version % 100);
  }
  if (void* lib = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD)) {
    link_map* map = nullptr;
    if (dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) {
      text += std::string(" from ") + map->l_name;
    }
    dlclose(lib);
  }
  return text;
}

ncclComm_t initCommunicator(const DistEnv& env, const ncclUniqueId& id) {
  ncclComm_t comm = nullptr;
  checkNccl(ncclCommInitRank(&comm, env.world, id, env.rank), nullptr, "ncclCommInitRank");
  return comm;
}

}  // namespace ncclrec::trainer
