// nccl_loop: one rank of real NCCL on GPU 0, for the GPU checks (scripts/gpu-check.sh). Issues N
// one-element all-reduces on one stream and prints the host time per call, so that running it
// with and without LD_PRELOAD=libncclrec.so gives the shim's cost per call on real NCCL; then one
// broadcast and one group of send/recv to itself, so that the black box holds each kind of op.
//   nccl_loop [N]
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(x)                                                          \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "nccl_loop: %s: %s\n", #x, cudaGetErrorString(e_)); \
      return 1;                                                                \
    }                                                                          \
  } while (0)
#define CHECK_NCCL(x)                                                          \
  do {                                                                         \
    ncclResult_t r_ = (x);                                                     \
    if (r_ != ncclSuccess) {                                                   \
      std::fprintf(stderr, "nccl_loop: %s: %s\n", #x, ncclGetErrorString(r_)); \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 20000;
  CHECK_CUDA(cudaSetDevice(0));
  ncclUniqueId id;
  CHECK_NCCL(ncclGetUniqueId(&id));
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, 1, id, 0));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  float* buf = nullptr;
  CHECK_CUDA(cudaMalloc(&buf, 1024 * sizeof(float)));
  // Warm-up, then the timed loop: host time per enqueue, the GPU drained once at the end.
  for (int i = 0; i < 100; ++i)
    CHECK_NCCL(ncclAllReduce(buf, buf, 1, ncclFloat, ncclSum, comm, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i)
    CHECK_NCCL(ncclAllReduce(buf, buf, 1, ncclFloat, ncclSum, comm, stream));
  const auto t1 = std::chrono::steady_clock::now();
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::printf("nccl_loop: %d all-reduces, %.1f ns host time per call\n", n,
              std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
  CHECK_NCCL(ncclBroadcast(buf, buf, 1024, ncclFloat, 0, comm, stream));
  CHECK_NCCL(ncclGroupStart());
  CHECK_NCCL(ncclSend(buf, 16, ncclFloat, 0, comm, stream));
  CHECK_NCCL(ncclRecv(buf + 512, 16, ncclFloat, 0, comm, stream));
  CHECK_NCCL(ncclGroupEnd());
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_NCCL(ncclCommDestroy(comm));
  CHECK_CUDA(cudaFree(buf));
  return 0;
}
