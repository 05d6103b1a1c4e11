#include "recorder/dump_client.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>

#include "format/bbox_ring.h"
#include "recorder/dump/dump_api.h"
#include "recorder/real_dl.h"
#include "recorder/recorder.h"

namespace ncclrec::recorder {
namespace {

// Directory of the object this code is in (libncclrec.so, or a test binary).
NcclrecWriteDumpFn loadWriter(const std::string& configured, std::string* error) {
  static std::once_flag once;
  static NcclrecWriteDumpFn fn = nullptr;
  static std::string load_error;
  std::call_once(once, [&] {
    std::string candidates[3] = {configured, libraryDirectory() + "/libncclrec_dump.so",
                                 "libncclrec_dump.so"};
    for (const std::string& c : candidates) {
      if (c.empty() || c == "/libncclrec_dump.so") continue;
      void* handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        if (load_error.empty()) load_error = dlerror();
        if (!configured.empty()) break;  // an explicit path that fails is the answer
        continue;
      }
      fn = reinterpret_cast<NcclrecWriteDumpFn>(realDlsym(handle, "ncclrecWriteDump"));
      if (fn != nullptr) return;
      load_error = c + " has no ncclrecWriteDump";
    }
  });
  if (fn == nullptr) *error = "cannot load libncclrec_dump.so: " + load_error;
  return fn;
}

}  // namespace

std::string libraryDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&libraryDirectory), &info) == 0 || info.dli_fname == nullptr)
    return "";
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

bool writeDump(const Recorder& recorder, format::DumpReason reason, const std::string& detail,
               std::string* path, std::string* error) {
  NcclrecWriteDumpFn fn = loadWriter(recorder.params().dump_library, error);
  if (fn == nullptr) return false;
  const format::BboxHeader* h = recorder.header();
  const uint32_t n = format::atomicField(const_cast<uint32_t&>(h->dump_count)).load() + 1;
  *path = recorder.params().dir + "/" +
          recorder.blackBoxName().dump(n, format::dumpReasonName(reason)).fileName();
  char message[512] = {};
  NcclrecDumpRequest request{};
  request.api_version = NCCLREC_DUMP_API_VERSION;
  request.bbox = h;
  request.bbox_bytes = h->file_bytes;
  request.bbox_path = recorder.blackBoxPath().c_str();
  request.out_path = path->c_str();
  request.reason = static_cast<uint32_t>(reason);
  request.detail = detail.c_str();
  request.symbolize_lines = recorder.params().symbolize ? 1 : 0;
  request.error = message;
  request.error_capacity = sizeof(message);
  if (fn(&request) != 0) {
    *error = message[0] != '\0' ? message : "unknown error";
    return false;
  }
  return true;
}

}  // namespace ncclrec::recorder
