// NCCL plumbing of the trainer: the torchrun environment, the ncclUniqueId shared through cxxrun's
// store, the communicator, and one way of failing on an NCCL error.
//
// The trainer compiles against hostnccl's nccl.h and links hostnccl's libnccl.so.2 by SONAME only,
// so the same binary runs on hostnccl or on NVIDIA's NCCL, whichever libnccl.so.2 the loader finds
// first (LD_LIBRARY_PATH, cxxrun --nccl).
#pragma once

#include <nccl.h>

#include <stdexcept>
#include <string>

#include "base/status.h"

namespace ncclrec::trainer {

// The torchrun contract: RANK, WORLD_SIZE, LOCAL_RANK (absent: a one-rank job).
struct DistEnv {
  int rank = 0;
  int world = 1;
  int local_rank = 0;
  bool under_cxxrun = false;  // CXXRUN_STORE is set: the unique id goes through the store
};

// Fails naming the variable when one is set but is not a number in range.
base::StatusOr<DistEnv> distEnvFromEnvironment();

// Rank 0 makes the unique id; the others receive it through cxxrun's store (under cxxrun), else
// through `id_file` (rank 0 writes it atomically; give each run a fresh path). A one-rank job
// shares nothing.
base::StatusOr<ncclUniqueId> shareUniqueId(const DistEnv& env, const std::string& id_file,
                                           double timeout_s);

// What the trainer throws when an NCCL call fails; main() prints it as one line and exits 1.
class NcclError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws NcclError("<what>: <NCCL's error string> (<NCCL's last error>)") unless r is ncclSuccess.
// Used as checkNccl(ncclAllReduce(...), comm, "...") right where the collective is issued, never
// inside a wrapper around it: the recorder names the function that called NCCL as the call site,
// so each collective is issued directly by the function that verdicts should name.
void checkNccl(ncclResult_t r, ncclComm_t comm, const char* what);

// "NCCL 2.28.9 from /path/libnccl.so.2": which library the loader picked, for the start-up banner.
std::string ncclLibraryDescription();

// ncclCommInitRank for this rank; throws NcclError.
ncclComm_t initCommunicator(const DistEnv& env, const ncclUniqueId& id);

}  // namespace ncclrec::trainer
