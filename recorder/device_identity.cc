#include "recorder/device_identity.h"

#include <dlfcn.h>

#include <cctype>
#include <cstring>

#include "format/bbox_layout.h"
#include "recorder/cuda_completion.h"
#include "recorder/cuda_driver.h"

namespace ncclrec::recorder {
namespace {

// Fills what the driver of `handle` says about `device` (the ordinal in this process), or, when
// `device` is -1, about the current context's device first.
void askDriver(void* handle, DeviceIdentity* id) {
  CudaDriver d;
  d.resolve(handle);
  if (id->device < 0) {
    int current = -1;
    if (d.ctxGetDevice == nullptr || d.ctxGetDevice(&current) != kCudaSuccess || current < 0)
      return;
    id->device = current;
    id->source = format::kDeviceFromCudaContext;
  }
  int dev = -1;
  if (d.deviceGet == nullptr || d.deviceGet(&dev, id->device) != kCudaSuccess) return;
  char bus[sizeof(id->bus_id)] = {};
  if (d.deviceGetPciBusId != nullptr &&
      d.deviceGetPciBusId(bus, static_cast<int>(sizeof(bus)), dev) == kCudaSuccess) {
    bus[sizeof(bus) - 1] = '\0';
    // NCCL and nvidia-smi disagree on case; one spelling makes equal ids compare equal.
    for (size_t i = 0; bus[i] != '\0'; ++i)
      id->bus_id[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(bus[i])));
  }
  unsigned char uuid[16] = {};
  if (d.deviceGetUuid != nullptr && d.deviceGetUuid(uuid, dev) == kCudaSuccess)
    std::memcpy(id->uuid, uuid, sizeof(uuid));
}

}  // namespace

DeviceIdentity identifyDevice(int comm_device, HostncclGetDeviceFn hostnccl,
                              const char* cuda_library) {
  DeviceIdentity id;
  if (comm_device >= 0) {
    id.device = comm_device;
    id.source = format::kDeviceFromComm;
  }
  if (hostnccl != nullptr) {
    // Emulated devices: a GPU the process may also have says nothing about them.
    int device = -1;
    if (id.device < 0 && hostnccl(&device) == 0 && device >= 0) {
      id.device = device;
      id.source = format::kDeviceFromHostnccl;
    }
    return id;
  }
  if (cuda_library == nullptr || *cuda_library == '\0')
    cuda_library = CudaCompletion::kDefaultLibrary;
  void* handle = dlopen(cuda_library, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (handle == nullptr) return id;  // no driver in this process: the ordinal is all there is
  askDriver(handle, &id);
  dlclose(handle);  // drops the reference NOLOAD took; whoever loaded it keeps it loaded
  return id;
}

}  // namespace ncclrec::recorder
