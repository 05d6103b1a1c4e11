#include "format/testing/bbox_builder.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <new>

#include "format/bbox_ring.h"

namespace ncclrec::format::testing {

void BboxBuilder::Free::operator()(uint8_t* p) const {
  ::operator delete (p, std::align_val_t{4096});
}

BboxBuilder::BboxBuilder(BboxCapacities caps) {
  const BboxGeometry g =
      computeGeometry(caps.ring, caps.comms, caps.stacks, caps.stack_depth, caps.modules,
                      caps.pycodes, caps.pyblob, caps.threads, caps.links);
  size_ = g.file_bytes;
  bytes_.reset(static_cast<uint8_t*>(::operator new (size_, std::align_val_t{4096})));
  std::memset(bytes_.get(), 0, size_);
  header_ = reinterpret_cast<BboxHeader*>(bytes_.get());
  initHeader(header_, caps.ring, caps.comms, caps.stacks, caps.stack_depth, caps.modules,
             caps.pycodes, caps.pyblob, caps.threads, caps.links);
}

uint32_t BboxBuilder::addPythonCode(const std::string& file, const std::string& qualname,
                                    int first_line, uint32_t line_format,
                                    const std::vector<uint8_t>& line_table) {
  const uint32_t i = header_->pycode_count++;
  PyCodeRecord& r = pyCodeRecords(header_)[i];
  auto put = [&](const void* data, size_t n, uint64_t* off, uint32_t* len) {
    *off = header_->pyblob_used;
    *len = static_cast<uint32_t>(n);
    std::memcpy(pyBlob(header_) + header_->pyblob_used, data, n);
    header_->pyblob_used += n;
  };
  put(file.data(), file.size(), &r.filename_off, &r.filename_len);
  put(qualname.data(), qualname.size(), &r.qualname_off, &r.qualname_len);
  put(line_table.data(), line_table.size(), &r.linetable_off, &r.linetable_len);
  r.code = 0x1000 + i;
  r.first_line = first_line;
  r.line_format = line_format;
  r.valid = kValidMark;
  return i;
}

uint64_t BboxBuilder::addEvent(const Event& e) {
  const uint64_t index = addUnpublishedEvent(e);
  publishEvent(&ringSlots(header_)[index & (header_->ring_capacity - 1)], index);
  return index;
}

uint64_t BboxBuilder::addUnpublishedEvent(const Event& e) {
  uint64_t index = 0;
  Event* slot = claimEvent(header_, &index);
  const uint64_t seq = slot->seq;
  *slot = e;
  slot->seq = seq;
  return index;
}

uint32_t BboxBuilder::addComm(const CommRecord& c) {
  const uint32_t i = header_->comm_count++;
  CommRecord& r = commRecords(header_)[i];
  r = c;
  r.valid = kValidMark;
  return i;
}

uint32_t BboxBuilder::addStack(const std::vector<uint64_t>& frames) {
  const uint32_t id = header_->stack_count++;
  StackRecord* r = stackRecord(header_, id);
  const auto depth = static_cast<uint32_t>(std::min<size_t>(frames.size(), header_->stack_depth));
  std::memcpy(reinterpret_cast<uint8_t*>(r) + offsetof(StackRecord, frames), frames.data(),
              depth * sizeof(uint64_t));
  r->hash = 0x1234 + id;
  r->depth = depth;
  r->valid = kValidMark;
  return id;
}

void BboxBuilder::addModule(const std::string& path, uint64_t base, uint64_t size,
                            const std::vector<uint8_t>& build_id) {
  ModuleRecord& r = moduleRecords(header_)[header_->module_count++];
  r.base = base;
  r.size = size;
  r.build_id_len = static_cast<uint32_t>(std::min(build_id.size(), sizeof(r.build_id)));
  std::memcpy(r.build_id, build_id.data(), r.build_id_len);
  std::strncpy(r.path, path.c_str(), sizeof(r.path) - 1);
  r.valid = kValidMark;
}

bool BboxBuilder::writeTo(const std::string& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes_.get()), static_cast<std::streamsize>(size_));
  return static_cast<bool>(out.flush());
}

Event makeCollective(OpType op, uint64_t comm_id, int rank, int nranks, uint64_t op_seq,
                     uint64_t count, int64_t enqueue_ns) {
  Event e{};
  e.op = static_cast<uint16_t>(op);
  e.comm_id = comm_id;
  e.rank = rank;
  e.nranks = nranks;
  e.op_seq = op_seq;
  e.count = count;
  e.dtype = 7;  // float32
  e.redop =
      op == OpType::kAllReduce || op == OpType::kReduce || op == OpType::kReduceScatter ? 0 : -1;
  e.peer = op == OpType::kBroadcast || op == OpType::kReduce ? 0 : -1;
  e.enqueue_ns = enqueue_ns;
  e.start_ns = enqueue_ns;
  e.end_ns = enqueue_ns + 1'500'000;
  e.state = static_cast<uint8_t>(EventState::kCompleted);
  e.stack_id = kNoStack;
  e.comm_index = kNoComm;
  e.device = 0;
  return e;
}

}  // namespace ncclrec::format::testing
