#include "live/testing/live_bbox.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "format/bbox_ring.h"

namespace ncclrec::live::testing {

std::unique_ptr<LiveBbox> LiveBbox::create(const std::string& path,
                                           const format::testing::BboxBuilder& initial) {
  if (!initial.writeTo(path)) return nullptr;
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return nullptr;
  void* map = ::mmap(nullptr, initial.size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return nullptr;
  return std::unique_ptr<LiveBbox>(new LiveBbox(static_cast<uint8_t*>(map), initial.size()));
}

LiveBbox::LiveBbox(uint8_t* map, size_t size)
    : map_(map), size_(size), header_(reinterpret_cast<format::BboxHeader*>(map)) {}

LiveBbox::~LiveBbox() { ::munmap(map_, size_); }

uint64_t LiveBbox::beginEvent(const format::Event& e) {
  uint64_t index = 0;
  format::Event* s = format::claimEvent(header_, &index);
  const uint64_t seq = s->seq;
  *s = e;
  s->seq = seq;
  return index;
}

void LiveBbox::publish(uint64_t index) { format::publishEvent(slot(index), index); }

uint64_t LiveBbox::addEvent(const format::Event& e) {
  const uint64_t index = beginEvent(e);
  publish(index);
  return index;
}

format::Event* LiveBbox::slot(uint64_t index) {
  return &format::ringSlots(header_)[index & (header_->ring_capacity - 1)];
}

uint32_t LiveBbox::addComm(const format::CommRecord& c) {
  const uint32_t i =
      format::atomicField(header_->comm_count).fetch_add(1, std::memory_order_relaxed);
  format::CommRecord& r = format::commRecords(header_)[i];
  r = c;
  r.valid = 0;
  format::atomicField(r.valid).store(format::kValidMark, std::memory_order_release);
  return i;
}

format::CommRecord* LiveBbox::comm(uint32_t index) { return &format::commRecords(header_)[index]; }

}  // namespace ncclrec::live::testing
