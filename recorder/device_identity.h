// Which device a rank is on, read when it creates a communicator (or fails to): the ordinal, and
// where the CUDA driver is loaded and initialized in the process, the device's PCI bus id and
// UUID. The ordinal alone does not tell GPUs apart across processes (CUDA_VISIBLE_DEVICES may
// show each process its own GPU as device 0); the bus id does, which is what the analyzer needs to
// call two ranks of one host on one GPU (NCCL's "Duplicate GPU detected").
//
// Never on the record path: it may dlopen (RTLD_NOLOAD: it never loads or initializes the driver
// itself) and call the driver. Stateless, so any thread may call it.
#pragma once

#include <cstdint>

namespace ncclrec::recorder {

struct DeviceIdentity {
  int device = -1;
  uint32_t source = 0;  // format::kDevice*
  char bus_id[32] = {};
  uint8_t uuid[16] = {};  // all zero when unknown
};

// hostnccl's `ncclResult_t hostncclGetDevice(int* device)` (docs/hostnccl.md): its emulated
// current device. NVIDIA's NCCL has no such function: the caller passes nullptr then.
using HostncclGetDeviceFn = int (*)(int* device);

// `comm_device`: ncclCommCuDevice's answer for the new communicator, -1 when there is none (the
// init failed). `hostnccl`: non-null when the NCCL in use is hostnccl, whose devices are emulated:
// its answer is taken and no driver is asked. `cuda_library`: the driver's file name
// (NCCLREC_CUDA_LIBRARY), "libcuda.so.1" when null or empty; consulted only if already loaded.
DeviceIdentity identifyDevice(int comm_device, HostncclGetDeviceFn hostnccl,
                              const char* cuda_library);

}  // namespace ncclrec::recorder
