// The ABI table of NVIDIA's nccl.h (NCCLREC_REAL_NCCL_INCLUDE is this target's only nccl.h).
#include <nccl.h>

#include "hostnccl/tests/abi_table.h"

#ifdef NCCLREC_HOSTNCCL_HEADER
#error "abi_real.cc must see NVIDIA's nccl.h, not hostnccl's"
#endif

#define NCCLREC_ABI_TABLE_FUNCTION realNcclAbiTable
#include "hostnccl/tests/abi_table.inc"
