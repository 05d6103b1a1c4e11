// Linked against the real libnccl.so.2 (when installed): gets a unique id and tries to create a
// 1-rank communicator. Without a GPU driver the init fails; the shim must record both calls with
// NCCL's own return codes. Prints "<call> <code>" per call.
#include <nccl.h>

#include <cstdio>

int main() {
  ncclUniqueId id;
  const ncclResult_t got_id = ncclGetUniqueId(&id);
  std::printf("ncclGetUniqueId %d\n", static_cast<int>(got_id));
  ncclComm_t comm = nullptr;
  const ncclResult_t init = ncclCommInitRank(&comm, 1, id, 0);
  std::printf("ncclCommInitRank %d\n", static_cast<int>(init));
  if (init == ncclSuccess) ncclCommDestroy(comm);
  return 0;
}
