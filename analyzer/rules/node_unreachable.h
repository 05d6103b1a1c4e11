// The node_unreachable rule: a multi-node job whose node 0 could no longer hear from another node
// (its agent's heartbeat in the job's store stopped: LoadedSet::silent_nodes, the launcher's fact)
// and so got none of that node's recordings, while the ranks it can see all run and wait in the
// same op (a ring's ranks that got their data of it in the next one) of a communicator that also
// holds ranks it cannot see. Those ranks wait for the silent node's:
// the network between the nodes stopped, or that node did (frozen, powered off). Without the
// launcher's fact the same recordings are all_wait_in_one_op's "no data for ranks ...".
#pragma once

#include <optional>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

// node_unreachable on the first communicator with ops pending (Engine::firstPending) when every
// rank recorded there runs and waits in the same op (opEveryRunningRankIsIn), the op's
// communicator has more ranks than recorded ones, and some of the ranks with no data ran on a
// silent node; nullopt otherwise. The culprits are the silent nodes' ranks with no data.
std::optional<Verdict> findNodeUnreachable(const Engine& en);

}  // namespace ncclrec::analyzer::engine
