// Test controls of the stub NCCL (libnccl.so.2 built from stub_nccl.cc). Only the stub exports
// these; a test that calls them must run against the stub, not the real NCCL or hostnccl.
//
// `name` is always the nccl* name of an entry point ("ncclAllReduce"), never the pnccl* alias:
// a call through either symbol is the same call. Every function may be called from any thread.
#ifndef NCCLREC_TESTS_SUPPORT_STUB_CONTROL_H_
#define NCCLREC_TESTS_SUPPORT_STUB_CONTROL_H_

#ifdef __cplusplus
extern "C" {
#endif

// Calls received by that entry point since load or the last reset, counted on entry (before any
// block), so a test can poll it to learn that a call has started. -1 for an unknown name.
int stubNcclCallCount(const char* name);
// Zeroes every call count and forgets every recorded argument.
void stubNcclResetCounts(void);

// From now on that entry point returns `result` (an ncclResult_t) after counting, recording and
// blocking, without doing anything else. -1 restores normal behaviour. Ignored for the two entry
// points that return strings.
void stubNcclSetResult(const char* name, int result);

// From now on a call to that entry point sleeps `block_ms` milliseconds after being counted.
// -1 blocks it until stubNcclRelease(); 0 restores normal behaviour.
void stubNcclSetBlock(const char* name, int block_ms);
// Lets every call blocked with -1 go on, and lets later ones through without blocking until
// stubNcclSetBlock(..., -1) is called again (a latch, so a release that races ahead of the call it
// meant to free is not lost).
void stubNcclRelease(void);

// Argument `index` (0-based, in declaration order) of the last call to that entry point, as a
// pointer-sized word: pointers as they are, integers and enums converted. An ncclUniqueId passed by
// value is recorded as its bytes 8..15 (the counter ncclGetUniqueId writes there). NULL for an
// unknown name or an index past the last argument. Under concurrent calls the words of one call
// may mix with those of another.
const void* stubNcclLastArg(const char* name, int index);

// What ncclCommGetAsyncError reports from now on, for live communicators and new ones.
void stubNcclSetAsyncError(int result);

// Clears every count, argument, forced result, block and the async error, those set from the
// environment included.
void stubNcclResetAll(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // NCCLREC_TESTS_SUPPORT_STUB_CONTROL_H_
