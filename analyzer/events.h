// `ncclrec-analyze --events`: each rank's recorded NCCL calls, as text or JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/site_rule.h"
#include "base/status.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

struct EventsOptions {
  std::optional<int> rank;          // only this global rank
  std::optional<std::string> comm;  // only this communicator: hex id or a prefix of its 16 digits
  std::optional<uint64_t> last;     // only the last N events of each rank (after the filters)
  bool json = false;
  std::vector<std::string> library_frames;  // Python library layers besides the defaults
};

// Checks the options that are not checked by their type (--comm must be hex).
base::Status validateEventsOptions(const EventsOptions& options);

// Prints the listing of `set` to `out`: ranks in the set's order, a header line each, then one
// line per event (or a JSON document). Fails, printing nothing, when --rank names a rank the set
// does not hold.
base::Status printEvents(const format::LoadedSet& set, const EventsOptions& options,
                         std::ostream& out);

// Loads `paths` and prints their events; loader warnings go to `err` as one line each. Returns
// an exit code (exit_codes.h); a failure is one line on `err`.
int runEvents(const std::vector<std::string>& paths, const EventsOptions& options,
              std::ostream& out, std::ostream& err);

// The time "age" of an incomplete op is measured to: a dump's time; for a black box, the latest
// of its heartbeat, exit and fatal-signal marks, event timestamps and carried-over dump time.
int64_t snapshotTime(const format::RankData& rank);

// Where an event was issued: from the call-site frame `rule` picks (site_rule.h) outward, the
// first symbolized function ("Trainer.save_checkpoint train.py:88", "saveCheckpoint(int)
// main.cc:33"), else the call-site frame as module+offset ("libtrain.so+0x1234"), else its
// address; "-" when the event has no stack.
std::string callSite(const format::RankData& rank, const format::EventRecord& event,
                     const analyzer::SiteRule& rule);
// The same with the default library layers and no plumbing learnt (one rank seen alone).
std::string callSite(const format::RankData& rank, const format::EventRecord& event);

}  // namespace ncclrec::analyzer
