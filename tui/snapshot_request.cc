#include "tui/snapshot_request.h"

#include <unistd.h>

#include "recorder/format/recording_files.h"

namespace ncclrec::tui {

std::string requestThreadSnapshots(const Snapshot& s) {
  size_t local = 0;
  size_t alive = 0;
  std::string run_id;
  bool one_run = true;
  for (const RankEntry& r : s.ranks) {
    if (r.source.rfind("agent ", 0) == 0) continue;  // another host's: not in our directory
    ++local;
    alive += r.liveness == Liveness::kAlive;
    if (local == 1) {
      run_id = r.run_id;
    } else if (r.run_id != run_id) {
      one_run = false;
    }
  }
  if (s.dir.empty() || local == 0)
    return "no thread snapshot asked: no black boxes read from a directory here (ranks seen "
           "through --connect cannot be asked)";
  format::TriggerFile request;
  request.run_id = one_run ? run_id : "";
  request.pid = static_cast<int>(getpid());
  request.reason = std::string(format::kSnapshotReason);
  request.detail = "ncclrec-top asks for a thread snapshot";
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) request.host = host;
  const std::string path = s.dir + "/" + std::string(format::kSnapshotRequestFileName);
  std::string error;
  if (!request.write(path, &error)) return "no thread snapshot asked: " + error;
  return "asked " + std::to_string(alive) + " running rank" + (alive == 1 ? "" : "s") +
         " for a thread snapshot; the rank detail shows it (" + path + ")";
}

}  // namespace ncclrec::tui
