// Deterministic snapshots for ncclrec-top's tests (analysis, keys, golden frames): ranks built
// in code with fixed clocks, so a frame drawn from them never changes. Test-only.
#pragma once

#include <cstdint>

#include "format/model.h"
#include "live/snapshot.h"

namespace ncclrec::live::testing {

inline constexpr int64_t kT0 = 1'700'000'000'000'000'000;  // every fixture's clock starts here
inline constexpr uint64_t kCommWorld = 0xa11ce00000000001ull;
inline constexpr uint64_t kCommTp = 0xb0b0000000000002ull;

// A rank of a host-backend job: `done` completed all-reduces on `comm` one second apart from
// kT0 + 1 s, then `pending` more left incomplete (entered at kT0 + 20 s). Stack 1 is the
// all-reduce's call site (train+0x1234 <- train+0x2000 <- libc.so.6+0x2724a).
format::RankData makeRank(int rank, int world, const char* host, uint64_t comm, int done,
                          int pending);

// Six ranks at kT0 + 100 s: ranks 0-2 and 5 wait 80 s in all-reduce #13 on kCommWorld (rank 5
// crashed there with SIGSEGV), rank 3 is alive but stopped after #12 (stuck in host code), rank 4
// exited after #12; ranks 0 and 1 also share kCommTp (named "tp", 5 all-reduces). Names for
// train+0x1234 and train+0x2000 are in the symbol table, libc's frame is not. Analyzed.
Snapshot hangSnapshot(double hang_after_s = 60);

// Two healthy ranks at kT0 + 30.5 s, their last all-reduce completed 0.5 s ago. Analyzed.
Snapshot healthySnapshot();

// Two ranks of a Python job at kT0 + 100 s, calling NCCL through a project wrapper
// (comm_utils.py all_reduce) over ctypes: rank 0 waits in a 5th all-reduce from
// Trainer.save_checkpoint (stack 2), rank 1 in its 5th from train_step (stack 1). Analyzed.
Snapshot pythonSnapshot();

// The demo's hang after cxxrun stopped it, at kT0 + 100 s: four ranks of node0, ranks 0-2 waiting
// in all-reduce #13 and rank 3 stopped after #12, each stopped after its dump (hang dump for rank
// 0, trigger dumps for the others, at kT0 + 81 s). Rank 3's latest thread snapshot (taken at its
// dump): its main thread sleeping in nextBatch() (train+0x3000) under libc's futex wait, a loader
// thread running in decodeShard() (train+0x3100), the recorder's watchdog, a thread that did not
// answer (signal blocked, in the kernel's io_schedule), one not asked in a sleeping call, and a
// Python thread in load_shard() data.py:81 under threading's Condition.wait.
// Analyzed.
Snapshot stoppedSnapshot();

// Four ranks at kT0 + 100 s after 12 all-reduces on kCommWorld: ranks 0-2 have been in
// ncclCommInitRank of kCommEval (4 ranks; their records say it is being created) since kT0 +
// 20 s, rank 3 skipped it and waits in the world's all-reduce #13. Analyzed.
inline constexpr uint64_t kCommEval = 0xe7a1000000000003ull;
Snapshot creatingSnapshot();

// A link cut between two hosts, at kT0 + 100 s: four ranks of a ring (ranks 0-1 on nodea, 2-3 on
// nodeb) wait in all-reduce #13 on kCommWorld since kT0 + 20 s, each with its transport counters
// on channel 0 (12 ops of 4 steps, then #13 of 6 steps): every connection moved 52 steps (4 of
// #13's) except 1 -> 2, where rank 1 sent 52 (the last at kT0 + 20.3 s) and rank 2 received 50
// (the last at kT0 + 20.2 s). Analyzed.
Snapshot transportSnapshot();

// `n` ranks, rank r having completed 100 - (r % 7) all-reduces: for scrolling. Analyzed.
Snapshot manyRanksSnapshot(int n);

}  // namespace ncclrec::live::testing
