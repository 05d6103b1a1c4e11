#include "launcher/worker_env.h"

#include <dirent.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace ncclrec::launcher {

int visibleGpus(const std::string& dev_dir) {
  int n = 0;
  if (DIR* d = opendir(dev_dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const char* name = e->d_name;
      if (std::strncmp(name, "nvidia", 6) != 0 || name[6] == '\0') continue;
      bool digits = true;
      for (const char* p = name + 6; *p != '\0'; ++p)
        digits &= std::isdigit(static_cast<unsigned char>(*p)) != 0;
      n += digits ? 1 : 0;
    }
    closedir(d);
  }
  return n;
}

std::string findHostNcclDir(const std::string& exe_path) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::weakly_canonical(exe_path, ec);
  if (ec) return "";
  const std::filesystem::path prefix = exe.parent_path().parent_path();
  // The build tree (build/bin/cxxrun, build/hostnccl), then the installed tree (bin/cxxrun,
  // lib/ncclrec/hostnccl: cmake/NcclrecInstall.cmake).
  for (const std::filesystem::path& dir : {prefix / "hostnccl", prefix / "lib/ncclrec/hostnccl"})
    if (std::filesystem::exists(dir / "libnccl.so.2", ec)) return dir.string();
  return "";
}

NcclSelection selectNccl(NcclChoice choice, int gpus, const std::string& host_dir) {
  NcclSelection s;
  const bool want_host = choice == NcclChoice::kHost || (choice == NcclChoice::kAuto && gpus == 0);
  if (!want_host) {
    s.message = choice == NcclChoice::kSystem
                    ? "cxxrun: NCCL: the system's libnccl.so.2 (--nccl=system)"
                    : "cxxrun: NCCL: the system's libnccl.so.2 (" + std::to_string(gpus) +
                          " GPU(s) visible)";
    return s;
  }
  if (host_dir.empty()) {
    s.ok = false;
    s.message = std::string("cxxrun: --nccl=") + (choice == NcclChoice::kHost ? "host" : "auto") +
                " needs hostnccl (libnccl.so.2 in ../hostnccl or ../lib/ncclrec/hostnccl beside "
                "the cxxrun binary), and it is not there: build target hostnccl, or use "
                "--nccl=system";
    return s;
  }
  s.use_host = true;
  s.host_dir = host_dir;
  s.message = "cxxrun: NCCL: hostnccl from " + host_dir +
              (choice == NcclChoice::kHost ? " (--nccl=host)" : " (no GPU visible)");
  return s;
}

std::map<std::string, std::string> workerEnv(const Options& o, const JobFacts& f, int local_rank,
                                             const std::string& inherited_ld) {
  const int world = o.nnodes * o.nproc_per_node;
  const int rank = o.node_rank * o.nproc_per_node + local_rank;
  std::map<std::string, std::string> env = {
      {"RANK", std::to_string(rank)},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"WORLD_SIZE", std::to_string(world)},
      {"LOCAL_WORLD_SIZE", std::to_string(o.nproc_per_node)},
      {"GROUP_RANK", std::to_string(o.node_rank)},
      {"GROUP_WORLD_SIZE", std::to_string(o.nnodes)},
      {"ROLE_NAME", "default"},
      {"ROLE_RANK", std::to_string(rank)},
      {"ROLE_WORLD_SIZE", std::to_string(world)},
      {"MASTER_ADDR", o.master_addr},
      {"MASTER_PORT", std::to_string(f.worker_master_port)},
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(f.attempt)},
      {"TORCHELASTIC_MAX_RESTARTS", std::to_string(o.max_restarts)},
      {"TORCHELASTIC_RUN_ID", f.run_id},
      // cxxrun's store does not speak c10d's protocol: PyTorch must start its own.
      {"TORCHELASTIC_USE_AGENT_STORE", "False"},
      {"CXXRUN_STORE", f.store_endpoint},
      {"CXXRUN_TOKEN", f.token},
      {"NCCLREC_DIR", f.dump_dir},
      {"NCCLREC_RUN_ID", f.run_id},
      // cxxrun's supervisor runs the live hang detector itself: no ncclrec-watch per job.
      {"NCCLREC_WATCHER", "off"},
  };
  if (o.nproc_per_node > 1 && std::getenv("OMP_NUM_THREADS") == nullptr)
    env["OMP_NUM_THREADS"] = "1";  // as torchrun does
  if (f.nccl.use_host)
    env["LD_LIBRARY_PATH"] =
        inherited_ld.empty() ? f.nccl.host_dir : f.nccl.host_dir + ":" + inherited_ld;
  return env;
}

}  // namespace ncclrec::launcher
