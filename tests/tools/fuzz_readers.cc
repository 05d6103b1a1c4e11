// libFuzzer target for the recording readers: any bytes given as a black box, a dump, a pickle or
// a PyTorch Flight Recorder dump (pickle or JSON) must yield a model or one error, never a crash,
// a hang or an out-of-bounds read (built with ASan).
#include <cstddef>
#include <cstdint>

#include "format/dump_io.h"
#include "format/flight_recorder.h"
#include "format/pickle_reader.h"
#include "format/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)ncclrec::format::parseBlackBox(data, size, "fuzz.bbox");
  (void)ncclrec::format::parseDump(data, size, "fuzz.ncclrec.pb");
  (void)ncclrec::format::parsePickle(data, size, "fuzz.pickle");
  (void)ncclrec::format::parseFlightRecorder(data, size, "nccl_trace_rank_0", 0);
  return 0;
}
