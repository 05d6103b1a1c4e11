#include "format/live_map.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "format/reader.h"

namespace ncclrec::format {
namespace {

base::Status fail(const std::string& path, const std::string& why) {
  return base::Status::error(path + ": " + why);
}

}  // namespace

base::StatusOr<std::unique_ptr<LiveMap>> LiveMap::open(const std::string& path, bool* starting) {
  if (starting != nullptr) *starting = false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(path, "not a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size < sizeof(BboxHeader)) {
    ::close(fd);
    // The recorder sizes the file before it writes the header: a short file is one being made,
    // or not a black box at all; both are looked at again when they change.
    if (starting != nullptr) *starting = true;
    return fail(path, size == 0 ? "empty file" : "shorter than a black box header");
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  const int map_err = errno;
  ::close(fd);
  if (map == MAP_FAILED) return fail(path, std::string("mmap: ") + std::strerror(map_err));
  const auto* h = static_cast<const BboxHeader*>(map);
  base::Status status;
  static constexpr char kZeros[sizeof(kBboxMagic)] = {};
  if (std::memcmp(h->magic, kBboxMagic, sizeof(h->magic)) != 0) {
    const bool blank = std::memcmp(h->magic, kZeros, sizeof(kZeros)) == 0;
    if (starting != nullptr) *starting = blank;
    status = fail(path, blank ? "no header yet" : "not an ncclrec black box (bad magic)");
  } else {
    status = checkBlackBoxHeader(*h, size, path);
  }
  if (!status.ok()) {
    ::munmap(map, size);
    return status;
  }
  return std::unique_ptr<LiveMap>(
      new LiveMap(static_cast<const uint8_t*>(map), size, st.st_dev, st.st_ino));
}

LiveMap::~LiveMap() { ::munmap(const_cast<uint8_t*>(data_), size_); }

}  // namespace ncclrec::format
