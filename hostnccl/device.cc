#include "hostnccl/device.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace ncclrec::hostnccl {
namespace {

// A non-negative int, or -1 when `text` is unset, empty or not one.
int envDevice(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0 || v > INT_MAX) return -1;
  return static_cast<int>(v);
}

constexpr size_t kHostBytes = 256;

}  // namespace

Placement currentPlacement() {
  Placement p;
  p.host = hostIdentity();
  int device = envDevice("HOSTNCCL_DEVICE");
  if (device < 0) device = envDevice("LOCAL_RANK");
  p.known = device >= 0;
  p.device = p.known ? device : 0;
  return p;
}

std::string hostIdentity() {
  if (const char* id = std::getenv("HOSTNCCL_HOSTID"); id != nullptr && *id != '\0') return id;
  char name[kHostBytes] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) std::strcpy(name, "localhost");
  std::string host = name;
  if (const char* node = std::getenv("GROUP_RANK"); node != nullptr && *node != '\0')
    host += std::string("/node ") + node;
  return host;
}

std::vector<char> encodePlacement(const Placement& p) {
  // [device int32][known uint8][host, NUL-padded to kHostBytes]
  std::vector<char> out(sizeof(int32_t) + 1 + kHostBytes, '\0');
  const int32_t device = p.device;
  std::memcpy(out.data(), &device, sizeof(device));
  out[sizeof(device)] = p.known ? 1 : 0;
  std::memcpy(out.data() + sizeof(device) + 1, p.host.data(),
              std::min(p.host.size(), kHostBytes - 1));
  return out;
}

bool decodePlacement(const std::vector<char>& bytes, Placement* p) {
  if (bytes.size() != sizeof(int32_t) + 1 + kHostBytes) return false;
  int32_t device = 0;
  std::memcpy(&device, bytes.data(), sizeof(device));
  p->device = device;
  p->known = bytes[sizeof(device)] != 0;
  const char* host = bytes.data() + sizeof(device) + 1;
  p->host.assign(host, strnlen(host, kHostBytes));
  return true;
}

int duplicateOf(const std::vector<Placement>& all, int self) {
  if (self < 0 || static_cast<size_t>(self) >= all.size() || !all[self].known) return -1;
  for (size_t i = 0; i < all.size(); ++i) {
    if (static_cast<int>(i) != self && all[i].known && all[i].device == all[self].device &&
        all[i].host == all[self].host) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace ncclrec::hostnccl
