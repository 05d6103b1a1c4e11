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
  // Where `comm` will be when the same block creates it first (NcclBlock::creates): read at the
  // call, after the creation.
  const ncclComm_t* made_comm = nullptr;
  size_t count = 0;
  ncclDataType_t dtype = ncclFloat32;
  ncclRedOp_t redop = ncclSum;
  int root = 0;
  int peer = 0;
  void* send = nullptr;
  void* recv = nullptr;
  int color = 0;               // kSplit
  int key = 0;                 // kSplit
  ncclComm_t* made = nullptr;  // kSplit, kInit: where the new communicator goes
  ncclUniqueId id{};           // kInit
  int rank = 0;                // kInit: the rank it joins as
  int nranks = 0;              // kInit
};

// `creates` (kInit calls) are issued first, outside the group: the communicators the block is
// the first to use, made lazily.
struct NcclBlock {
  bool grouped = false;
  std::vector<NcclCall> calls;
  std::vector<NcclCall> creates;
};

using SiteFn = ncclResult_t (*)(const NcclBlock&);

// The function of site `site` (0 <= site < siteCount()).
SiteFn siteFn(int site);

}  // namespace ncclrec::faultgen
