// The job-wide view of a hang on several nodes: the agents of nodes 1..N-1 send their ranks'
// recordings (dumps, and the black boxes of ranks that did not dump) to node 0's agent through
// the job's store, and node 0 writes them into its dump directory, one folder per node, so that
// one analyzer run sees every rank even when each node's NCCLREC_DIR is node-local.
//
// Store layout under a prefix (one per node and attempt, chosen by the agent): "f<I>/c<J>" holds
// chunk J of file I, at most kChunkBytes each (the store refuses frames over 1 MiB), and
// "manifest" (JSON: node, host, workers, files with size and checksum, warnings) is set last. A
// store serves each connection's requests in order, so a manifest that is visible means every
// chunk before it is too. The receiver checks each file's size and checksum, writes it under a
// temporary name then renames it, and deletes the chunks from the store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "format/store_client.h"
#include "report/hang_report.h"

namespace ncclrec::launcher {

inline constexpr size_t kChunkBytes = 512 * 1024;
// What one node sends at most; files past it are named in the manifest's warnings instead.
inline constexpr uint64_t kMaxSendBytes = uint64_t{1} << 30;

// 64-bit FNV-1a: enough to tell a file that arrived whole from one that did not.
uint64_t fnv1a64(std::string_view bytes);

// What a node sent, as node 0 received it.
struct NodeRecordings {
  int node_rank = 0;
  std::string host;
  std::vector<report::WorkerInfo>
      workers;                        // every worker of that node, with or without a recording
  std::vector<std::string> files;     // paths written under the receiving directory
  std::vector<std::string> warnings;  // "node 1 (host h): FILE: why" for what did not arrive
};

// Sends the files at `paths` (names kept, directories dropped) and the node's workers under
// `prefix`. Fails only when the store fails; a file that cannot be read, or that would pass
// kMaxSendBytes, is left out and named in the manifest's warnings. Returns the bytes sent.
// `after_chunk`, when set, runs after each chunk (the agent's heartbeat, during a long send).
base::StatusOr<uint64_t> sendRecordings(format::StoreClient& store, const std::string& prefix,
                                        int node_rank, const std::string& host,
                                        const std::vector<report::WorkerInfo>& workers,
                                        const std::vector<std::string>& paths,
                                        const std::function<void()>& after_chunk = nullptr);

// nullopt while the manifest under `prefix` is not in the store; else writes the node's files
// into `dir` (created when needed) and returns what arrived. A file whose chunks are missing, or
// whose size or checksum does not match, is not written but named in the warnings. Fails on a
// manifest that does not parse or a store that fails.
base::StatusOr<std::optional<NodeRecordings>> receiveRecordings(format::StoreClient& store,
                                                                const std::string& prefix,
                                                                const std::string& dir);

}  // namespace ncclrec::launcher
