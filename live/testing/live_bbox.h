// A black box file written the way the recorder writes it: mapped MAP_SHARED read-write, events
// claimed and published with the ring protocol (bbox_ring.h), records published by storing
// `valid` last. For the tests of the incremental reader and for the benchmark's writer, which
// must change a file while ncclrec-top maps it. Test-only; one writer thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "format/bbox_layout.h"
#include "format/testing/bbox_builder.h"

namespace ncclrec::live::testing {

class LiveBbox {
 public:
  // Writes `initial` (stacks, modules, identity already in it) to `path` and maps it. nullptr
  // when the file cannot be written or mapped.
  static std::unique_ptr<LiveBbox> create(const std::string& path,
                                          const format::testing::BboxBuilder& initial);
  ~LiveBbox();
  LiveBbox(const LiveBbox&) = delete;
  LiveBbox& operator=(const LiveBbox&) = delete;

  format::BboxHeader* header() { return header_; }
  // Claims, fills and publishes an event; returns its index.
  uint64_t addEvent(const format::Event& e);
  // Claims and fills an event without publishing it (a writer caught mid-event).
  uint64_t beginEvent(const format::Event& e);
  void publish(uint64_t index);
  // The live slot of event `index` (state, end_ns and result are updated in place).
  format::Event* slot(uint64_t index);
  // Publishes a comm record; returns its index. comm_count is raised before `valid` is set.
  uint32_t addComm(const format::CommRecord& c);
  format::CommRecord* comm(uint32_t index);

 private:
  LiveBbox(uint8_t* map, size_t size);
  uint8_t* map_;
  size_t size_;
  format::BboxHeader* header_;
};

}  // namespace ncclrec::live::testing
