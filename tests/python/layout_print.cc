// Test helper: prints the recorder's CPython layout table entry for one version in the format
// layout_probe.c prints from that version's headers (layout_test.sh compares the two).
//   layout_print MINOR
#include <cstdio>
#include <cstdlib>

#include "recorder/python_frames.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: layout_print MINOR\n");
    return 2;
  }
  const auto* l = ncclrec::recorder::pythonLayout(3, std::atoi(argv[1]));
  if (l == nullptr) {
    std::printf("unsupported\n");
    return 0;
  }
  std::printf("tstate_frame %u\n", l->tstate_frame);
  if (l->chain == ncclrec::recorder::PythonLayout::Chain::kCFrame)
    std::printf("cframe_current %u\n", l->cframe_current);
  std::printf("frame_back %u\nframe_code %u\nframe_instr %u\n", l->frame_back, l->frame_code,
              l->frame_instr);
  if (l->frame_owner >= 0) std::printf("frame_owner %d\n", l->frame_owner);
  std::printf("cstack_owner %d\n", l->cstack_owner);
  std::printf("code_filename %u\ncode_name %u\ncode_qualname %u\n", l->code_filename, l->code_name,
              l->code_qualname);
  std::printf("code_firstlineno %u\ncode_linetable %u\ncode_adaptive %u\n", l->code_firstlineno,
              l->code_linetable, l->code_adaptive);
  std::printf("str_ascii_data %u\nstr_compact_data %u\n", l->str_ascii_data, l->str_compact_data);
  std::printf("tstate_next %u\ntstate_thread_id %u\ntstate_native_id %u\n", l->tstate_next,
              l->tstate_thread_id, l->tstate_native_id);
  return 0;
}
