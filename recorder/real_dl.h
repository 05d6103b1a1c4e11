// The C library's own dlsym and dlvsym, found without asking the dynamic linker for them by name.
//
// libncclrec.so exports dlsym and dlvsym (interpose/dl_hook.cc), and once it defines them its own
// calls to those names bind to its own definitions. Every lookup the recorder and the shim make
// goes through realDlsym/realDlvsym instead. They read the C library's dynamic symbol table in
// memory (reached from the link map the dynamic linker publishes in _r_debug), call no function a
// sanitizer intercepts and are built without sanitizer instrumentation, so the shim's trampolines
// can use them from the very first dlsym of a process, made by a sanitizer runtime while it
// initializes. glibc only (libc.so.6, or libdl.so.2 before glibc 2.34); elsewhere they find
// nothing.
#pragma once

namespace ncclrec::recorder {

using DlsymFn = void* (*)(void* handle, const char* name);
using DlvsymFn = void* (*)(void* handle, const char* name, const char* version);

// libc's functions, nullptr where they cannot be found. Found once and kept (concurrent first
// calls may each look; they find the same); no allocation, no lock, async-signal-safe.
DlsymFn libcDlsym();
DlvsymFn libcDlvsym();

// dlsym/dlvsym as libc answers them: nullptr with dlerror() set when the symbol is not found, and
// RTLD_NEXT relative to the object these functions are linked into (libncclrec.so, or a test
// binary). nullptr when libc's function cannot be found.
void* realDlsym(void* handle, const char* name);
void* realDlvsym(void* handle, const char* name, const char* version);

}  // namespace ncclrec::recorder
