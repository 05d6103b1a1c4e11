// Shares an ncclUniqueId between the ranks of a job. Under cxxrun (CXXRUN_STORE set) through the
// launcher's store, keyed by `path`, so nothing stale from an earlier run can be read; without a
// launcher through the file at `path`: rank 0 publishes it atomically (temporary name + rename),
// the others wait for it (give each run a fresh path).
#pragma once

#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "format/store_client.h"

namespace samples {

// `maker`: this rank makes the id and publishes it (rank 0 in shareUniqueId).
inline ncclUniqueId shareUniqueIdFrom(bool maker, int rank, const std::string& path,
                                      double timeout_s = 60) {
  ncclUniqueId id{};
  if (std::getenv("CXXRUN_STORE") != nullptr) {
    if (maker && ncclGetUniqueId(&id) != ncclSuccess)
      throw std::runtime_error("ncclGetUniqueId failed");
    const auto status =
        ncclrec::format::storeBroadcast("nccl_id:" + path, maker, &id, sizeof(id), timeout_s);
    if (!status.ok()) throw std::runtime_error(status.message());
    return id;
  }
  if (maker) {
    if (ncclGetUniqueId(&id) != ncclSuccess) throw std::runtime_error("ncclGetUniqueId failed");
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    std::ofstream(tmp, std::ios::binary).write(id.internal, sizeof(id.internal));
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw std::runtime_error("cannot publish the unique id at " + path);
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int>(timeout_s * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path, std::ios::binary);
    if (in.read(id.internal, sizeof(id.internal))) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("rank " + std::to_string(rank) + ": no unique id at " + path +
                           " after " + std::to_string(timeout_s) + " s (is its maker running?)");
}

inline ncclUniqueId shareUniqueId(int rank, const std::string& path, double timeout_s = 60) {
  return shareUniqueIdFrom(rank == 0, rank, path, timeout_s);
}

inline int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

inline std::string envString(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// The rank and the number of ranks as the launcher gives them: torchrun and cxxrun (RANK,
// WORLD_SIZE), OpenMPI's mpirun (OMPI_COMM_WORLD_*), Slurm's srun (SLURM_PROCID, SLURM_NTASKS).
inline int launcherRank() {
  return envInt("RANK", envInt("OMPI_COMM_WORLD_RANK", envInt("SLURM_PROCID", 0)));
}
inline int launcherWorldSize() {
  return envInt("WORLD_SIZE", envInt("OMPI_COMM_WORLD_SIZE", envInt("SLURM_NTASKS", 1)));
}

// A name for this run of the job that every rank computes alike and the next run does not
// share, so a unique-id file of an earlier run is never read: torchrun's run id and port (a
// standalone torchrun makes a fresh run id each time), mpirun's job id, Slurm's job and step
// ids; "local" without a launcher (then give each run its own NCCLREC_SAMPLE_ID_FILE).
inline std::string launcherJobKey() {
  if (!envString("TORCHELASTIC_RUN_ID").empty())
    return envString("TORCHELASTIC_RUN_ID") + "-" + envString("MASTER_PORT") + "-" +
           envString("TORCHELASTIC_RESTART_COUNT");
  if (!envString("OMPI_MCA_ess_base_jobid").empty())
    return "mpi-" + envString("OMPI_MCA_ess_base_jobid");
  if (!envString("SLURM_JOB_ID").empty())
    return "slurm-" + envString("SLURM_JOB_ID") + "." + envString("SLURM_STEP_ID");
  return "local";
}

// $NCCLREC_SAMPLE_ID_FILE, else a file of this program and run in /tmp. A program that makes
// more than one id names each by `purpose`, which extends either path.
inline std::string uniqueIdPath(const std::string& program, const std::string& purpose = "") {
  const std::string file = envString("NCCLREC_SAMPLE_ID_FILE");
  const std::string path =
      !file.empty() ? file : "/tmp/ncclrec-" + program + "-" + launcherJobKey() + ".id";
  return purpose.empty() ? path : path + "." + purpose;
}

}  // namespace samples
