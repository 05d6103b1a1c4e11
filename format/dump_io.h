// Dumps (*.ncclrec.pb): the model <-> protobuf conversion and the framed file (ncclrec.proto
// describes the framing). Serialization happens when dumping, never on the record path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "format/model.h"
#include "format/ncclrec.pb.h"

namespace ncclrec::format {

// The 8-byte file prefix: 7 bytes that name the format, then the framing version digit.
inline constexpr char kDumpFileMagic[8] = {'N', 'C', 'R', 'E', 'C', 'P', 'B', '1'};
inline constexpr size_t kDumpMagicPrefixBytes = 7;
inline constexpr std::string_view kDumpMessageMagic = "ncclrec-dump";
// Major: bumped when a reader of the previous one would misread a new dump. Minor: fields added.
inline constexpr uint32_t kDumpFormatMajor = 1;
// Minor 1: Comm bus_id, uuid, device_source. Minor 2: Frame python. Minor 3: threads. Minor 4:
// Comm root and blocking (communicators in creation), Dump net_env. Minor 5: links (transport
// progress per connection).
inline constexpr uint32_t kDumpFormatMinor = 5;

// Everything in `data` except source_path and source, which say where a model was loaded from.
pb::Dump toProto(const RankData& data);
// The inverse; source_path is left empty and source is kDump.
RankData fromProto(const pb::Dump& dump);

// Writes `data` as a framed dump: to "<path>.tmp.<pid>" first, fsync'ed, mode 0600, then renamed
// to `path`, so a reader never sees a partial dump. Does not throw; on failure the temp file is
// removed and the Status names the path and the failing step.
base::Status writeDumpFile(const RankData& data, const std::string& path);

// Parses a framed dump held in memory; `source_path` names it in errors and in the result.
base::StatusOr<RankData> parseDump(const void* data, size_t size, const std::string& source_path);

}  // namespace ncclrec::format
