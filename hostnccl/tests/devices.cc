// Device placement scenarios of the conformance worker: two ranks of one host on one device (the
// LOCAL_RANK bug), which NCCL refuses at init, and how hostnccl picks its emulated device.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "hostnccl/tests/device_memory.h"
#include "hostnccl/tests/worker.h"

namespace ncclrec::hostnccl::testing {
namespace {

// Expects init of the communicator of id `index` to be refused as a duplicate device.
void expectDuplicate(int index) {
  ncclComm_t comm = nullptr;
  const ncclResult_t rc = ncclCommInitRank(&comm, gN, shareId(index), gRank);
  CHECK(rc == ncclInvalidUsage, "init with every rank on device 0 gave %d", rc);
  CHECK(comm == nullptr, "a refused init left a communicator");
  const std::string last = ncclGetLastError(nullptr);
  const std::string prefix =
      "Duplicate GPU detected : rank " + std::to_string(gRank) + " and rank ";
  CHECK(last.rfind(prefix, 0) == 0, "last error '%s'", last.c_str());
}

int deviceOf(ncclComm_t comm) {
  int device = -1;
  NCCL_OK(ncclCommCuDevice(comm, &device));
  return device;
}

}  // namespace

// Every rank selects device 0 before init: NCCL (and hostnccl) fail every rank's init with
// ncclInvalidUsage, "Duplicate GPU detected : rank R and rank S both on CUDA device ...".
int duplicateDevice() {
  if (!selectDevice(0)) return 77;
  expectDuplicate(0);
  return 0;
}

// hostnccl's device: HOSTNCCL_DEVICE, else LOCAL_RANK, else 0 and unknown (never a duplicate);
// hosts told apart by HOSTNCCL_HOSTID. Each step makes a fresh communicator.
int placement() {
  unsetenv("HOSTNCCL_DEVICE");
  unsetenv("LOCAL_RANK");
  unsetenv("HOSTNCCL_HOSTID");
  // Started by hand, no device chosen: device 0 everywhere, and no refusal.
  ncclComm_t unplaced = initComm(0);
  CHECK(deviceOf(unplaced) == 0, "unplaced rank on device %d", deviceOf(unplaced));
  checkSum(unplaced, gN * (gN - 1) / 2.0, "AllReduce with no device chosen");

  // Under a launcher: cuda:LOCAL_RANK, also what hostncclGetDevice says.
  setenv("LOCAL_RANK", std::to_string(gRank).c_str(), 1);
  auto getDevice =
      reinterpret_cast<ncclResult_t (*)(int*)>(dlsym(RTLD_DEFAULT, "hostncclGetDevice"));
  CHECK(getDevice != nullptr, "hostnccl does not export hostncclGetDevice");
  int current = -1;
  if (getDevice != nullptr) {
    CHECK(getDevice(&current) == ncclSuccess && current == gRank, "hostncclGetDevice gave %d",
          current);
    CHECK(getDevice(nullptr) == ncclInvalidArgument, "hostncclGetDevice(nullptr) accepted");
  }
  ncclComm_t local = initComm(1);
  CHECK(deviceOf(local) == gRank, "LOCAL_RANK %d gave device %d", gRank, deviceOf(local));

  // HOSTNCCL_DEVICE wins over LOCAL_RANK; equal devices on different hosts are fine.
  setenv("HOSTNCCL_DEVICE", "0", 1);
  setenv("HOSTNCCL_HOSTID", ("host" + std::to_string(gRank)).c_str(), 1);
  ncclComm_t hosts = initComm(2);
  CHECK(deviceOf(hosts) == 0, "HOSTNCCL_DEVICE=0 gave device %d", deviceOf(hosts));
  checkSum(hosts, gN * (gN - 1) / 2.0, "AllReduce with one device per host");

  // One host again: refused, and the refusal leaves the other communicators working.
  unsetenv("HOSTNCCL_HOSTID");
  if (gN > 1) expectDuplicate(3);
  checkSum(local, gN * (gN - 1) / 2.0, "AllReduce after a refused init");
  NCCL_OK(ncclCommDestroy(hosts));
  NCCL_OK(ncclCommDestroy(local));
  NCCL_OK(ncclCommDestroy(unplaced));
  return 0;
}

}  // namespace ncclrec::hostnccl::testing
