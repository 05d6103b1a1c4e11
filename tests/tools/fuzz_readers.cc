// libFuzzer target for the recording readers: any bytes given as a black box or as a dump must
// yield a model or one error, never a crash, a hang or an out-of-bounds read (built with ASan).
#include <cstddef>
#include <cstdint>

#include "recorder/format/dump_io.h"
#include "recorder/format/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)ncclrec::format::parseBlackBox(data, size, "fuzz.bbox");
  (void)ncclrec::format::parseDump(data, size, "fuzz.ncclrec.pb");
  return 0;
}
