// What each worker is given: torchrun's environment contract, cxxrun's store, ncclrec's dump
// directory, and which libnccl.so.2 it loads (--nccl).
#pragma once

#include <map>
#include <string>

#include "launcher/options.h"

namespace ncclrec::launcher {

// Number of NVIDIA GPU device nodes (/dev/nvidia0, /dev/nvidia1, ...) in `dev_dir`.
int visibleGpus(const std::string& dev_dir = "/dev");

// The directory holding hostnccl's libnccl.so.2 for the cxxrun at `exe_path`: in the build tree
// build/hostnccl/ beside build/bin/cxxrun, installed PREFIX/lib/ncclrec/hostnccl/ beside
// PREFIX/bin/cxxrun; "" when neither is there.
std::string findHostNcclDir(const std::string& exe_path);

// What --nccl resolved to, and the line cxxrun prints about it once at start.
struct NcclSelection {
  bool use_host = false;
  std::string host_dir;  // set when use_host
  std::string message;   // "cxxrun: NCCL: ..." or, on failure, the error line
  bool ok = true;
};
NcclSelection selectNccl(NcclChoice choice, int gpus, const std::string& host_dir);

// Facts of one attempt of the job, the same for every worker.
struct JobFacts {
  std::string run_id;
  int attempt = 0;
  std::string store_endpoint;  // host:port
  std::string token;
  int worker_master_port = 0;  // MASTER_PORT: a port left free for the workers' own rendezvous
  std::string dump_dir;        // NCCLREC_DIR of this attempt
  NcclSelection nccl;
};

// Variables set in worker `local_rank`'s environment, over what cxxrun inherited. `inherited_ld`
// is cxxrun's own LD_LIBRARY_PATH (hostnccl goes in front of it).
std::map<std::string, std::string> workerEnv(const Options& options, const JobFacts& facts,
                                             int local_rank, const std::string& inherited_ld);

}  // namespace ncclrec::launcher
