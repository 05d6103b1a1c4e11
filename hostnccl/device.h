// The emulated CUDA device. hostnccl runs on host memory, but a program's device choice is part of
// what it rehearses: NCCL refuses two ranks of one host on one GPU ("Duplicate GPU detected",
// ncclInvalidUsage), the bug of a program that never sets its device from LOCAL_RANK. So each
// process has a current device, as if the program had called cudaSetDevice, and init refuses a
// communicator in which two ranks of one host share one.
#pragma once

#include <string>
#include <vector>

namespace ncclrec::hostnccl {

struct Placement {
  std::string host;  // where the rank runs; see hostIdentity()
  int device = 0;
  // False when neither HOSTNCCL_DEVICE nor LOCAL_RANK said which device: a rank started by hand
  // has no known device, and is never called a duplicate.
  bool known = false;
  friend bool operator==(const Placement&, const Placement&) = default;
};

// The calling process's current device: HOSTNCCL_DEVICE if set (as if the program had called
// cudaSetDevice with it), else LOCAL_RANK (as if it had set cuda:LOCAL_RANK, the usual fix),
// else 0. Read from the environment at each call, like a device the program may change.
Placement currentPlacement();

// The host a rank is on for the duplicate check: HOSTNCCL_HOSTID if set; else the host name,
// followed by "/node N" when the launcher says which node it started (GROUP_RANK), so that nodes
// rehearsed on one machine count as separate hosts.
std::string hostIdentity();

// A fixed-size record of a placement, for the rendezvous store, and back; false on bad bytes.
std::vector<char> encodePlacement(const Placement& p);
bool decodePlacement(const std::vector<char>& bytes, Placement* p);

// The lowest rank other than `self` on self's host and device, or -1. Ranks whose device is not
// known collide with nobody. NCCL checks the same way: each rank against all the others.
int duplicateOf(const std::vector<Placement>& all, int self);

}  // namespace ncclrec::hostnccl
