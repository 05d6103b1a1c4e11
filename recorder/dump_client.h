// Writes a protobuf dump of this process's black box by calling into libncclrec_dump.so, which is
// dlopen'ed (RTLD_LOCAL) at the first dump.
#pragma once

#include <string>

#include "format/op_type.h"

namespace ncclrec::recorder {

class Recorder;

// The directory of the library this code is linked into (libncclrec.so), "" when unknown.
std::string libraryDirectory();

// Writes "<dir>/<black box name>.<n>.<reason>.ncclrec.pb". Not the record path; callers
// serialize dumps (Recorder::dumpNow holds a mutex).
bool writeDump(const Recorder& recorder, format::DumpReason reason, const std::string& detail,
               std::string* path, std::string* error);

}  // namespace ncclrec::recorder
