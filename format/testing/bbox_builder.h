// Builds black box images in memory for tests (format, analyzer, tui): the same layout and
// publication protocol the recorder uses, without a recorder. Test-only; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "format/bbox_layout.h"
#include "format/op_type.h"

namespace ncclrec::format::testing {

struct BboxCapacities {
  uint32_t ring = 16;  // a power of two
  uint32_t comms = 8;
  uint32_t stacks = 8;
  uint32_t stack_depth = 8;
  uint32_t modules = 4;
  uint32_t pycodes = 0;  // Python code records (0: no Python regions)
  uint64_t pyblob = 0;   // Python blob bytes
  uint32_t threads = 0;  // thread snapshot records (0: no thread region)
  uint32_t links = 0;    // link table slots (0: no link table)
};

class BboxBuilder {
 public:
  explicit BboxBuilder(BboxCapacities caps = {});

  // Identity and marks go straight into the header.
  BboxHeader* header() { return header_; }

  // Claims, fills and publishes one event (e.seq is ignored); returns its index.
  uint64_t addEvent(const Event& e);
  // Claims a slot and fills it but leaves it unpublished (odd seq), like a writer preempted
  // mid-write; returns its index.
  uint64_t addUnpublishedEvent(const Event& e);
  // Publishes a valid comm record (c.valid is set here); returns its index.
  uint32_t addComm(const CommRecord& c);
  // Interns a stack of return addresses (at most stack_depth kept); returns its id.
  uint32_t addStack(const std::vector<uint64_t>& frames);
  void addModule(const std::string& path, uint64_t base, uint64_t size,
                 const std::vector<uint8_t>& build_id);
  // Publishes a Python code record (needs caps.pycodes and caps.pyblob); returns its index, for
  // pythonFrameWord(index, offset) frames in addStack.
  uint32_t addPythonCode(const std::string& file, const std::string& qualname, int first_line,
                         uint32_t line_format, const std::vector<uint8_t>& line_table);

  const uint8_t* data() const { return bytes_.get(); }
  size_t size() const { return size_; }
  // Writes the image to `path`; false on any I/O error.
  bool writeTo(const std::string& path) const;

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, Free> bytes_;
  size_t size_ = 0;
  BboxHeader* header_ = nullptr;
};

// A completed collective on a host backend, with the fields a listing shows.
Event makeCollective(OpType op, uint64_t comm_id, int rank, int nranks, uint64_t op_seq,
                     uint64_t count, int64_t enqueue_ns);

}  // namespace ncclrec::format::testing
