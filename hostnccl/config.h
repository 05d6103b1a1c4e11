// hostnccl's environment knobs, read once per process.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ncclrec::hostnccl {

struct Config {
  // HOSTNCCL_TIMEOUT (seconds). Zero means "no timeout": a mismatched or abandoned collective
  // blocks forever, as it does with NCCL.
  std::chrono::milliseconds timeout{0};
  // HOSTNCCL_SOCKET_IFNAME: the interface whose address hostnccl listens on and connects from.
  std::string socketIfname;
  // NCCL_SOCKET_IFNAME, when HOSTNCCL_SOCKET_IFNAME is unset: which interface's address a unique
  // id advertises, matched as NCCL matches it (matchesIfname()).
  std::string ncclSocketIfname;
  // HOSTNCCL_DEBUG: 0 = silent (default), 1 = WARN, 2 = INFO.
  int debugLevel = 0;
  // HOSTNCCL_DROP_LINK=SRC>DST[@N], a fault for tests: from the N-th collective of each
  // communicator on (1-based, default 1), the messages communicator rank SRC sends to rank DST
  // are taken as sent but never delivered, as by a network path that stopped moving data after
  // the sender's socket took them. dropSrc < 0: no fault.
  int dropSrc = -1;
  int dropDst = -1;
  uint32_t dropFrom = 1;
  // HOSTNCCL_STALL_KERNEL=RANK@N, a fault for tests: communicator rank RANK's N-th collective of
  // each communicator (1-based) is launched but its kernel never starts (no KernelCh event, no
  // data moved) and the call never returns, as on a GPU whose stream is held by a kernel that
  // does not end, or that stopped (Xid). stallRank < 0: no fault.
  int stallRank = -1;
  uint32_t stallAt = 0;
};

// Thread-safe; the environment is read at the first call only.
const Config& config();

// Whether interface `name` matches an NCCL_SOCKET_IFNAME value as NCCL reads it: a comma list of
// prefixes ("eth,ib"), exact names after a leading '=' ("=eth0"), and a leading '^' that
// excludes what the rest matches ("^docker,lo").
bool matchesIfname(const std::string& spec, const std::string& name);

// Parses HOSTNCCL_DROP_LINK's value; false when it is not SRC>DST or SRC>DST@N (ranks >= 0,
// N >= 1).
bool parseDropLink(const char* text, int* src, int* dst, uint32_t* from);

// Parses HOSTNCCL_STALL_KERNEL's value; false when it is not RANK@N (RANK >= 0, N >= 1).
bool parseStallKernel(const char* text, int* rank, uint32_t* at);

// Parses HOSTNCCL_TIMEOUT's value; false when it is not a non-negative number of seconds.
bool parseTimeoutSeconds(const char* text, std::chrono::milliseconds* out);

}  // namespace ncclrec::hostnccl
