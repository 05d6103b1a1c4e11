// The token every client of the job's store presents (store_server.h). One node: a random one,
// made per run, that only the workers learn (through CXXRUN_TOKEN in their environment). Several
// nodes: the agents cannot agree on a random token without a secret they already share, and one
// derived from public facts (the run id) would let anyone who can reach the port read and write
// the store, so the user must give the secret: CXXRUN_TOKEN or --rdzv-token-file.
#pragma once

#include <string>

#include "base/status.h"

namespace ncclrec::launcher {

// 32 random hex digits from /dev/urandom; "" when it cannot be read.
std::string randomToken();

// The job's token. Multi-node: the secret (`env_secret`, else the first line of `token_file`,
// whitespace trimmed) joined with the run id, so that two jobs sharing a secret still cannot join
// each other's store. Fails with one line ("cxxrun: ...") when the secret is missing, empty or the
// file cannot be read. `env_secret` is CXXRUN_TOKEN, nullptr when unset.
base::StatusOr<std::string> jobToken(bool multi_node, const std::string& run_id,
                                     const char* env_secret, const std::string& token_file);

}  // namespace ncclrec::launcher
