// libncclrec_test_nccl_user.so: a library that links NCCL (hostnccl's libnccl.so.2, found through
// its RUNPATH), as PyTorch's libtorch_cuda.so links NVIDIA's. import_check.py loads it with ctypes
// after `import ncclrec` (or before, for the "too late" case) and calls it from a Python function:
// the calls reach the shim only if it came first in the global scope.
#include <nccl.h>

extern "C" {

// A one-rank communicator, `calls` in-place all-reduces of `count` floats, then destroyed.
// Returns the first NCCL result that is not ncclSuccess, else ncclSuccess.
__attribute__((visibility("default"))) int ncclrecTestAllReduce(int calls, int count) {
  ncclUniqueId id;
  if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) return r;
  ncclComm_t comm = nullptr;
  if (ncclResult_t r = ncclCommInitRank(&comm, 1, id, 0); r != ncclSuccess) return r;
  float data[64] = {};
  if (count > 64) count = 64;
  for (int i = 0; i < calls; ++i) {
    if (ncclResult_t r = ncclAllReduce(data, data, static_cast<size_t>(count), ncclFloat, ncclSum,
                                       comm, nullptr);
        r != ncclSuccess)
      return r;
  }
  return ncclCommDestroy(comm);
}

}  // extern "C"
