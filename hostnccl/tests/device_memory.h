// Buffers for the conformance worker: host memory under hostnccl, CUDA device memory when the
// worker is built against real NCCL (HOSTNCCL_CONFORMANCE_CUDA), so the same scenarios check both.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#ifdef HOSTNCCL_CONFORMANCE_CUDA
#include <cuda_runtime_api.h>
#endif
#include <nccl.h>

namespace ncclrec::hostnccl::testing {

#ifdef HOSTNCCL_CONFORMANCE_CUDA
inline bool selectDevice(int rank) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return false;
  return cudaSetDevice(rank % n) == cudaSuccess;
}
inline cudaStream_t makeStream() {
  cudaStream_t s = nullptr;
  cudaStreamCreate(&s);
  return s;
}
inline void syncStream(cudaStream_t s) { cudaStreamSynchronize(s); }
inline void* devAlloc(size_t bytes) {
  void* p = nullptr;
  cudaMalloc(&p, bytes == 0 ? 1 : bytes);
  return p;
}
inline void devFree(void* p) { cudaFree(p); }
inline void toDevice(void* dst, const void* src, size_t n) {
  cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice);
}
inline void toHost(void* dst, const void* src, size_t n) {
  cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost);
}
#else
// As cudaSetDevice above: hostnccl's emulated device (docs/hostnccl.md).
inline bool selectDevice(int device) {
  return setenv("HOSTNCCL_DEVICE", std::to_string(device).c_str(), 1) == 0;
}
inline cudaStream_t makeStream() { return nullptr; }
inline void syncStream(cudaStream_t) {}
inline void* devAlloc(size_t bytes) { return std::calloc(1, bytes == 0 ? 1 : bytes); }
inline void devFree(void* p) { std::free(p); }
inline void toDevice(void* dst, const void* src, size_t n) { std::memcpy(dst, src, n); }
inline void toHost(void* dst, const void* src, size_t n) { std::memcpy(dst, src, n); }
#endif

// Owns one device allocation.
class DevBuf {
 public:
  explicit DevBuf(size_t bytes) : p_(devAlloc(bytes)), bytes_(bytes) {}
  ~DevBuf() { devFree(p_); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  void* get() const { return p_; }
  char* at(size_t offset) const { return static_cast<char*>(p_) + offset; }
  size_t bytes() const { return bytes_; }

 private:
  void* p_;
  size_t bytes_;
};

}  // namespace ncclrec::hostnccl::testing
