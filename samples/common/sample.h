// What every sample shares, so that each main.cc shows only its bug: the rank and world size from
// the launcher (RANK and WORLD_SIZE as cxxrun and torchrun set them, or mpirun's and srun's own),
// the ncclUniqueId exchange (through cxxrun's store, else a file: unique_id_file.h), CHECK_NCCL,
// and the mode switch.
//
// Every sample runs as `sample_<name> [faulty|healthy]`: `faulty` (the default) has the bug,
// `healthy` is the same program with the fix, and runs to completion.
#pragma once

#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "samples/common/unique_id_file.h"

// A failed NCCL call ends the process with exit code 1, as an uncaught error would in a training
// script; the message names the rank and the call.
#define CHECK_NCCL(call)                                                                        \
  do {                                                                                          \
    const ncclResult_t check_nccl_result = (call);                                              \
    if (check_nccl_result != ncclSuccess) {                                                     \
      std::fprintf(stderr, "rank %d: %s failed: %s (%d)\n", samples::launcherRank(), #call,     \
                   ncclGetErrorString(check_nccl_result), static_cast<int>(check_nccl_result)); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

namespace samples {

struct Job {
  int rank = 0;
  int world = 1;
  bool healthy = false;  // run the fixed program
  ncclComm_t comm = nullptr;
};

// Shares a fresh unique id under `key` and makes a communicator of all `world` ranks. Exits with
// code 1 and one line on stderr when the id cannot be shared.
inline ncclComm_t initComm(int rank, int world, const std::string& key) {
  ncclUniqueId id{};
  try {
    id = shareUniqueId(rank, key);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: cannot share the NCCL unique id: %s\n", rank, e.what());
    std::exit(1);
  }
  ncclComm_t comm = nullptr;
  CHECK_NCCL(ncclCommInitRank(&comm, world, id, rank));
  return comm;
}

// Parses the mode and reads the rank, with no communicator yet (for the samples whose bug is in
// making it). A bad argument ends the process with exit code 2 and a usage line.
inline Job parse(int argc, char** argv) {
  Job job;
  const std::string mode = argc > 1 ? argv[1] : "faulty";
  if (argc > 2 || (mode != "faulty" && mode != "healthy")) {
    std::fprintf(stderr, "usage: %s [faulty|healthy] (got '%s')\n", argv[0], mode.c_str());
    std::exit(2);
  }
  job.healthy = mode == "healthy";
  job.rank = launcherRank();
  job.world = launcherWorldSize();
  return job;
}

// parse(), then the job's communicator. `name` keys the unique id (NCCLREC_SAMPLE_ID_FILE
// overrides the file used without cxxrun).
inline Job start(int argc, char** argv, const char* name) {
  Job job = parse(argc, argv);
  job.comm = initComm(job.rank, job.world, uniqueIdPath(name));
  return job;
}

inline void finish(Job& job) {
  CHECK_NCCL(ncclCommDestroy(job.comm));
  std::printf("rank %d: finished\n", job.rank);
}

}  // namespace samples
