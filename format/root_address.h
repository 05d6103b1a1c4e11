// The bootstrap root a unique id names: the address where the process that called
// ncclGetUniqueId listens for the ranks of the communicator. Read from the id's bytes, in NCCL's
// layout (ncclBootstrapHandle: a 64-bit magic, then a sockaddr_in or sockaddr_in6) or hostnccl's
// ("HNCL", version, family, port, address); stored in a CommRecord (bbox_layout.h root_*).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ncclrec::format {

struct RootAddress {
  uint16_t family = 0;    // AF_INET or AF_INET6; 0 when unknown
  uint16_t port = 0;      // host byte order
  uint8_t addr[16] = {};  // network byte order; the first 4 bytes for AF_INET
};

// The root named by the 128-byte unique id at `id`; family 0 when neither layout reads (a zero
// id, an id of another library). No allocation: called by the shim before the creating call.
RootAddress rootOfUniqueId(const void* id, size_t bytes);

// "10.0.0.1:41234", "[fe80::1]:41234"; "" when family is 0 or unknown.
std::string formatRootAddress(uint16_t family, uint16_t port, const uint8_t (&addr)[16]);

}  // namespace ncclrec::format
