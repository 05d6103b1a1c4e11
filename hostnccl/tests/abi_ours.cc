// The ABI table of third_party/nccl/nccl.h.
#include <nccl.h>

#include "hostnccl/tests/abi_table.h"

#ifndef NCCLREC_HOSTNCCL_HEADER
#error "abi_ours.cc must see hostnccl's nccl.h"
#endif

#define NCCLREC_ABI_TABLE_FUNCTION ourNcclAbiTable
#include "hostnccl/tests/abi_table.inc"
