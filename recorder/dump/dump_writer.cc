// libncclrec_dump.so: turns the live black box of the calling process into a symbolized protobuf
// dump. Loaded by the recorder at its first dump; exports ncclrecWriteDump only.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "base/clock.h"
#include "format/bbox_layout.h"
#include "format/dump_io.h"
#include "format/reader.h"
#include "recorder/dump/dump_api.h"
#include "recorder/dump/sleep_unwind.h"
#include "recorder/dump/symbolize.h"

namespace {

int fail(const NcclrecDumpRequest* request, const std::string& message) {
  if (request->error != nullptr && request->error_capacity > 0)
    snprintf(request->error, request->error_capacity, "%s", message.c_str());
  return 1;
}

int writeDumpImpl(const NcclrecDumpRequest* request) {
  using namespace ncclrec;
  auto parsed = format::parseBlackBox(request->bbox, request->bbox_bytes,
                                      request->bbox_path != nullptr ? request->bbox_path : "");
  if (!parsed.ok()) return fail(request, parsed.status().message());
  format::RankData data = std::move(parsed).value();
  dump::Symbolizer symbolizer(request->symbolize_lines != 0);
  for (auto& [id, stack] : data.stacks) {
    for (format::Frame& frame : stack.frames) {
      if (frame.python) continue;  // named from the black box's code records already
      format::Frame resolved = symbolizer.symbolize(frame.address);
      if (resolved.module.empty()) resolved.module = frame.module;
      if (resolved.module_offset == 0) resolved.module_offset = frame.module_offset;
      frame = std::move(resolved);
    }
    stack.symbolized = true;
  }
  dump::BlockedThreadUnwinder unwinder;
  for (format::ThreadState& thread : data.threads) {
    // A thread left asleep (asking would have cut its sleep short) has no native frames: the
    // kernel's saved stack pointer and program counter give them, while it still sleeps.
    const bool native = std::any_of(thread.frames.begin(), thread.frames.end(),
                                    [](const format::Frame& f) { return !f.python; });
    if ((thread.flags & format::kThreadInSleepingCall) != 0 && !native) {
      const size_t max = format::kThreadMaxFrames;
      const size_t room = max - std::min(thread.frames.size(), max);
      const std::vector<uint64_t> unwound = unwinder.unwind(thread.tid, room);
      for (uint64_t address : unwound) {
        format::Frame frame;
        frame.address = address;
        thread.frames.push_back(std::move(frame));
      }
      if (!unwound.empty()) thread.flags |= format::kThreadUnwoundAsleep;
    }
    for (format::Frame& frame : thread.frames) {
      if (frame.python) continue;
      format::Frame resolved = symbolizer.symbolize(frame.address);
      if (resolved.module.empty()) resolved.module = frame.module;
      if (resolved.module_offset == 0) resolved.module_offset = frame.module_offset;
      frame = std::move(resolved);
    }
    thread.symbolized = true;
  }
  data.source = format::SourceKind::kDump;
  data.source_path = request->out_path;
  data.dump_reason = static_cast<format::DumpReason>(request->reason);
  data.dump_ns = ncclrec::base::realtimeNs();
  data.dump_detail = request->detail != nullptr ? request->detail : "";
  const base::Status written = format::writeDumpFile(data, request->out_path);
  if (!written.ok()) return fail(request, written.message());
  return 0;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int ncclrecWriteDump(
    const NcclrecDumpRequest* request) {
  if (request == nullptr) return 1;
  if (request->api_version != NCCLREC_DUMP_API_VERSION)
    return fail(request, "libncclrec_dump.so API version mismatch");
  try {
    return writeDumpImpl(request);
  } catch (const std::exception& e) {
    return fail(request, std::string("dump failed: ") + e.what());
  } catch (...) {
    return fail(request, "dump failed: unknown exception");
  }
}
