// The CUDA driver entry points the recorder calls, resolved from a libcuda that someone dlopen'ed
// (nothing links it): one table for completion tracking (cuda_completion.cc) and for the rank's
// device identity (device_identity.cc), as NCCL's cudawrap keeps one for NCCL.
//
// Only the driver ABI is assumed: CUresult and CUdevice are ints, handles are opaque pointers,
// CUuuid is 16 bytes. Resolving calls dlsym (real_dl.h) and may allocate; calling the entries is
// up to the user's rules (the record path calls only the event functions).
#pragma once

#include <string>

namespace ncclrec::recorder {

using CuResult = int;
constexpr CuResult kCudaSuccess = 0;
constexpr CuResult kCudaErrorInvalidContext = 201;
constexpr CuResult kCudaErrorNotReady = 600;

struct CudaDriver {
  // Completion tracking needs all of these (missingForCompletion()).
  CuResult (*init)(unsigned) = nullptr;
  CuResult (*ctxGetCurrent)(void**) = nullptr;
  CuResult (*ctxPushCurrent)(void*) = nullptr;
  CuResult (*ctxPopCurrent)(void**) = nullptr;
  CuResult (*streamGetCtx)(void*, void**) = nullptr;
  CuResult (*eventCreate)(void**, unsigned) = nullptr;
  CuResult (*eventRecord)(void*, void*) = nullptr;
  CuResult (*eventQuery)(void*) = nullptr;
  CuResult (*eventDestroy)(void*) = nullptr;
  // Optional: absent from very old drivers; without them graph capture is not detected.
  CuResult (*streamIsCapturing)(void*, int*) = nullptr;
  CuResult (*threadExchangeStreamCaptureMode)(int*) = nullptr;
  CuResult (*getErrorName)(CuResult, const char**) = nullptr;
  // Device identity; each optional.
  CuResult (*ctxGetDevice)(int*) = nullptr;
  CuResult (*deviceGet)(int*, int) = nullptr;
  CuResult (*deviceGetPciBusId)(char*, int, int) = nullptr;
  CuResult (*deviceGetUuid)(void*, int) = nullptr;

  // Resolves every entry the library of `handle` exports (the _v2 name first where one exists);
  // the others stay nullptr.
  void resolve(void* handle);
  // The driver name of the first entry completion tracking needs that is missing; nullptr if none.
  const char* missingForCompletion() const;
  // "CUDA_ERROR_NOT_READY (600)", or "CUresult 600" without cuGetErrorName.
  std::string describe(CuResult result) const;
};

}  // namespace ncclrec::recorder
