// Test helper: prints the Python frames of every event of a black box or dump, for
// frames_check.py to compare with what the program saw (traceback.extract_stack()).
//   print_frames FILE
// Output, one line per event that has Python frames, then one per frame (innermost first):
//   E <tab> index <tab> op name <tab> tid <tab> truncated(0|1)
//   F <tab> file <tab> function <tab> line
// and a last line: N <tab> events in the file <tab> events with native frames only.
// Exit 0, or 2 with one line on stderr when FILE cannot be read.
#include <cstdio>

#include "format/bbox_layout.h"
#include "format/op_type.h"
#include "format/reader.h"

int main(int argc, char** argv) {
  using namespace ncclrec::format;
  if (argc != 2) {
    std::fprintf(stderr, "usage: print_frames FILE\n");
    return 2;
  }
  auto loaded = loadFile(argv[1]);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", loaded.status().message().c_str());
    return 2;
  }
  const RankData& rank = loaded.value();
  size_t native_only = 0;
  for (const EventRecord& e : rank.events) {
    const auto it = rank.stacks.find(e.stackId());
    if (it == rank.stacks.end() || it->second.frames.empty()) continue;
    if (!it->second.frames[0].python) {
      ++native_only;
      continue;
    }
    std::printf("E\t%llu\t%s\t%u\t%d\n", static_cast<unsigned long long>(e.index),
                std::string(opName(e.op)).c_str(), e.tid(),
                (e.flags & kEventStackTruncated) != 0 ? 1 : 0);
    for (const Frame& f : it->second.frames) {
      if (!f.python) break;
      std::printf("F\t%s\t%s\t%d\n", f.file.c_str(), f.function.c_str(), f.line);
    }
  }
  std::printf("N\t%zu\t%zu\n", rank.events.size(), native_only);
  return 0;
}
