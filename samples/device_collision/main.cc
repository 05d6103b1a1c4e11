// The LOCAL_RANK device bug: the program never selects its GPU from LOCAL_RANK, so every rank of a
// host runs on cuda:0. NCCL refuses a communicator with two ranks of one host on one GPU:
// ncclCommInitRank fails on every rank with ncclInvalidUsage ("Duplicate GPU detected : rank 1
// and rank 0 both on CUDA device ..."), and the job dies before its first collective.
// Fix (healthy): select device LOCAL_RANK before creating the communicator.
//
// The device is selected the usual way: cudaSetDevice, from the CUDA runtime when the process can
// open one (dlopen: the sample builds without CUDA), and HOSTNCCL_DEVICE, hostnccl's emulated
// device (docs/hostnccl.md), for runs without a GPU.
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "samples/common/sample.h"

namespace {

// cudaSetDevice(device) if a CUDA runtime is there (its failure, e.g. no GPU, is left to NCCL to
// report), and the same choice for hostnccl.
void selectDevice(int device) {
  setenv("HOSTNCCL_DEVICE", std::to_string(device).c_str(), 1);
  for (const char* name : {"libcudart.so.13", "libcudart.so.12", "libcudart.so"}) {
    if (void* cudart = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
      if (auto set = reinterpret_cast<int (*)(int)>(dlsym(cudart, "cudaSetDevice"))) set(device);
      return;  // the runtime stays loaded: the device is its state
    }
  }
}

__attribute__((noinline)) ncclComm_t initProcessGroup(int rank, int world, const std::string& key) {
  ncclUniqueId id{};
  try {
    id = samples::shareUniqueId(rank, key);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: cannot share the NCCL unique id: %s\n", rank, e.what());
    std::exit(1);
  }
  ncclComm_t comm = nullptr;
  CHECK_NCCL(ncclCommInitRank(&comm, world, id, rank));
  return comm;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "faulty";
  if (argc > 2 || (mode != "faulty" && mode != "healthy")) {
    std::fprintf(stderr, "usage: %s [faulty|healthy] (got '%s')\n", argv[0], mode.c_str());
    return 2;
  }
  const int rank = samples::envInt("RANK", 0);
  const int world = samples::envInt("WORLD_SIZE", 1);
  // The bug: device 0 on every rank, where it should be the rank's place on its host.
  selectDevice(mode == "healthy" ? samples::envInt("LOCAL_RANK", 0) : 0);
  const char* file = std::getenv("NCCLREC_SAMPLE_ID_FILE");
  ncclComm_t comm = initProcessGroup(
      rank, world, file != nullptr && *file != '\0' ? file : "/tmp/ncclrec-device_collision.id");
  std::vector<float> grads(1024, 1.0f);
  for (int step = 0; step < 3; ++step) {
    CHECK_NCCL(
        ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
  }
  CHECK_NCCL(ncclCommDestroy(comm));
  std::printf("rank %d: finished\n", rank);
  return 0;
}
