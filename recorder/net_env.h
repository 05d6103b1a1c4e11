// The NCCL network settings of the process, kept in its black box (BboxHeader::net_env) when the
// recorder starts: when a communicator's bootstrap cannot connect, the interface or address
// family a rank was told to use is the first thing to check.
#pragma once

#include <cstddef>

namespace ncclrec::recorder {

// Writes "NAME=value NAME=value" for the variables of `environ` that steer NCCL's (and
// hostnccl's) choice of network, in environ's order, into out[0..size) NUL-terminated; a pair that
// does not fit whole is left out. Not the record path (reads the environment once, at init).
void captureNetEnv(char* const* environ, char* out, size_t size);

// Whether `name` (up to '=' or NUL) is one of those variables: NCCL_SOCKET_*, NCCL_IB_*,
// NCCL_NET, NCCL_NET_*, NCCL_COMM_ID, NCCL_HOSTID, NCCL_BOOTSTRAP_*, HOSTNCCL_SOCKET_IFNAME.
bool isNetSetting(const char* name);

}  // namespace ncclrec::recorder
