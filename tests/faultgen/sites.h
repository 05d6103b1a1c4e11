// The call-site functions of the generated programs: one noinline function per site, each named
// like a function of a training job, each issuing its block of NCCL calls from its own frame, so
// that the recorded stacks (and the analyzer's call sites) name it.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <vector>

#include "tests/faultgen/program.h"

namespace ncclrec::faultgen {

// One NCCL call with its arguments resolved for this rank: `root` and `peer` are ranks in `comm`.
struct NcclCall {
  Op op = Op::kAllReduce;
  ncclComm_t comm = nullptr;
  size_t count = 0;
  ncclDataType_t dtype = ncclFloat32;
  ncclRedOp_t redop = ncclSum;
  int root = 0;
  int peer = 0;
  void* send = nullptr;
  void* recv = nullptr;
  int color = 0;               // kSplit
  int key = 0;                 // kSplit
  ncclComm_t* made = nullptr;  // kSplit: where the new communicator goes
};

struct NcclBlock {
  bool grouped = false;
  std::vector<NcclCall> calls;
};

using SiteFn = ncclResult_t (*)(const NcclBlock&);

// The function of site `site` (0 <= site < siteCount()).
SiteFn siteFn(int site);

}  // namespace ncclrec::faultgen
