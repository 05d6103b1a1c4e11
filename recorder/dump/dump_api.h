/* The C ABI between the recorder (in libncclrec.so) and libncclrec_dump.so, which the recorder
 * dlopen's at its first dump. Keeping protobuf, the reader and the symbolizer in a library of
 * their own keeps them out of every process that LD_PRELOAD reaches but that never dumps. */
#ifndef NCCLREC_RECORDER_DUMP_DUMP_API_H_
#define NCCLREC_RECORDER_DUMP_DUMP_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NCCLREC_DUMP_API_VERSION 1

typedef struct {
  uint32_t api_version; /* NCCLREC_DUMP_API_VERSION */
  const void* bbox;     /* the live black-box mapping of the calling process */
  uint64_t bbox_bytes;
  const char* bbox_path;
  const char* out_path; /* final name; written to a temporary name, then renamed */
  uint32_t reason;      /* ncclrec::format::DumpReason */
  const char* detail;   /* one line, may be empty */
  int symbolize_lines;  /* 1: resolve file:line from debug info */
  char* error;          /* out: a one-line reason on failure */
  size_t error_capacity;
} NcclrecDumpRequest;

/* Returns 0 on success. Called from the recording process (watchdog thread, exit handler or an
 * ncclCommAbort caller), never from a signal handler. Never throws. */
int ncclrecWriteDump(const NcclrecDumpRequest* request);
typedef int (*NcclrecWriteDumpFn)(const NcclrecDumpRequest*);

#ifdef __cplusplus
}
#endif

#endif /* NCCLREC_RECORDER_DUMP_DUMP_API_H_ */
