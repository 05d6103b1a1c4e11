#include "live/snapshot_request.h"

#include "format/recording_files.h"

namespace ncclrec::live {
namespace {

bool throughAgent(const RankEntry& r) { return r.source.rfind("agent ", 0) == 0; }

// The request for the ranks read from `s.dir`; "" when none were.
std::string askLocalRanks(const Snapshot& s) {
  size_t local = 0;
  size_t alive = 0;
  std::string run_id;
  bool one_run = true;
  for (const RankEntry& r : s.ranks) {
    if (throughAgent(r)) continue;  // another host's: not in our directory
    ++local;
    alive += r.liveness == Liveness::kAlive;
    if (local == 1) {
      run_id = r.run_id;
    } else if (r.run_id != run_id) {
      one_run = false;
    }
  }
  if (s.dir.empty() || local == 0) return "";
  std::string error;
  const std::string path = format::writeSnapshotRequest(
      s.dir, one_run ? run_id : "", "ncclrec-top asks for a thread snapshot", &error);
  if (path.empty()) return "no thread snapshot asked: " + error;
  return "asked " + std::to_string(alive) + " running rank" + (alive == 1 ? "" : "s") +
         " for a thread snapshot; the rank detail shows it (" + path + ")";
}

}  // namespace

std::string requestThreadSnapshots(const Snapshot& s, bool* ask_agents) {
  *ask_agents = false;
  size_t remote = 0;
  for (const RankEntry& r : s.ranks) remote += throughAgent(r);
  std::string message = askLocalRanks(s);
  if (remote > 0) {
    *ask_agents = true;
    message += std::string(message.empty() ? "" : "; ") + "asking the agents of " +
               std::to_string(remote) + " rank" + (remote == 1 ? "" : "s") +
               " (--connect) for a thread snapshot: their answers show in the notes";
  }
  if (message.empty()) return "no thread snapshot asked: no ranks shown";
  return message;
}

}  // namespace ncclrec::live
