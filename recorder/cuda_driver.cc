#include "recorder/cuda_driver.h"

#include <initializer_list>

#include "recorder/real_dl.h"

namespace ncclrec::recorder {
namespace {

// Binds `fn` to the first of `names` the library exports.
template <typename Fn>
void bind(void* handle, std::initializer_list<const char*> names, Fn* fn) {
  for (const char* name : names) {
    if (void* sym = realDlsym(handle, name)) {
      *fn = reinterpret_cast<Fn>(sym);
      return;
    }
  }
}

}  // namespace

void CudaDriver::resolve(void* handle) {
  bind(handle, {"cuInit"}, &init);
  bind(handle, {"cuCtxGetCurrent"}, &ctxGetCurrent);
  bind(handle, {"cuCtxPushCurrent_v2", "cuCtxPushCurrent"}, &ctxPushCurrent);
  bind(handle, {"cuCtxPopCurrent_v2", "cuCtxPopCurrent"}, &ctxPopCurrent);
  bind(handle, {"cuStreamGetCtx"}, &streamGetCtx);
  bind(handle, {"cuEventCreate"}, &eventCreate);
  bind(handle, {"cuEventRecord"}, &eventRecord);
  bind(handle, {"cuEventQuery"}, &eventQuery);
  bind(handle, {"cuEventDestroy_v2", "cuEventDestroy"}, &eventDestroy);
  bind(handle, {"cuStreamIsCapturing"}, &streamIsCapturing);
  bind(handle, {"cuThreadExchangeStreamCaptureMode"}, &threadExchangeStreamCaptureMode);
  bind(handle, {"cuGetErrorName"}, &getErrorName);
  bind(handle, {"cuCtxGetDevice"}, &ctxGetDevice);
  bind(handle, {"cuDeviceGet"}, &deviceGet);
  bind(handle, {"cuDeviceGetPCIBusId"}, &deviceGetPciBusId);
  bind(handle, {"cuDeviceGetUuid_v2", "cuDeviceGetUuid"}, &deviceGetUuid);
}

const char* CudaDriver::missingForCompletion() const {
  if (init == nullptr) return "cuInit";
  if (ctxGetCurrent == nullptr) return "cuCtxGetCurrent";
  if (ctxPushCurrent == nullptr) return "cuCtxPushCurrent";
  if (ctxPopCurrent == nullptr) return "cuCtxPopCurrent";
  if (streamGetCtx == nullptr) return "cuStreamGetCtx";
  if (eventCreate == nullptr) return "cuEventCreate";
  if (eventRecord == nullptr) return "cuEventRecord";
  if (eventQuery == nullptr) return "cuEventQuery";
  if (eventDestroy == nullptr) return "cuEventDestroy";
  return nullptr;
}

std::string CudaDriver::describe(CuResult result) const {
  const char* name = nullptr;
  if (getErrorName != nullptr && getErrorName(result, &name) == kCudaSuccess && name != nullptr) {
    return std::string(name) + " (" + std::to_string(result) + ")";
  }
  return "CUresult " + std::to_string(result);
}

}  // namespace ncclrec::recorder
