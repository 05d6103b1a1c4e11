// The layout of hostnccl's ncclUniqueId (128 bytes, opaque to programs):
//   [0,4)   magic "HNCL"        [4]  version (1)      [5] flags (kDerived)
//   [6,8)   address family      [8,10) port, network order
//   [10,26) IPv4 or IPv6 address, network order
//   [32,48) secret: random for ncclGetUniqueId, derived from the parent's for split/shrink
// The rest is zero. The secret is the only credential the rendezvous server accepts.
#pragma once

#include <array>
#include <cstdint>

#include "hostnccl/net.h"
#include "third_party/nccl/nccl.h"

namespace ncclrec::hostnccl {

using Secret = std::array<uint8_t, 16>;

struct IdInfo {
  SockAddr root;
  Secret secret{};
  // A derived id is minted independently by every member of a split or shrink; its root may not
  // have registered it yet when the others connect, so clients retry instead of failing.
  bool derived = false;
};

void encodeId(const IdInfo& info, ncclUniqueId* id);
// False when the bytes are not a hostnccl id (wrong magic, version or family).
bool decodeId(const ncclUniqueId& id, IdInfo* info);

// Fills `secret` from getrandom(2); false if the kernel gave nothing.
bool randomSecret(Secret* secret);

// A secret that every member of a split/shrink computes alike from the parent's secret and the
// inputs that define the new communicator (kind, counter, color or excluded ranks).
Secret deriveSecret(const Secret& parent, const void* inputs, size_t len);

// 64-bit FNV-1a, used for secrets, communicator hashes and message signatures.
uint64_t fnv1a(const void* data, size_t len, uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace ncclrec::hostnccl
