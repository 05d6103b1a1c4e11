"""A communicator one rank never joins: after warmup every rank is meant to build an evaluation
communicator of all ranks. Each rank decides from its own copy of the run config whether
evaluation is on; the last rank's copy was written before the option existed, so it skips the
creation and goes on to the next training all-reduce. Ranks 0-2 wait in ncclCommInitRank for it,
and it waits in the all-reduce for them.
Fix (healthy): every member of a communicator creates it; decide membership from one config every
rank reads alike (or broadcast the decision from rank 0 first).

    python3 init_missing_rank.py [faulty|healthy] [handle|global]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ncclpy  # noqa: E402
import sample  # noqa: E402

STEPS = 4
WARMUP_STEPS = 2


def train_step(comm, grads):
    ncclpy.all_reduce(comm, grads)


def build_eval_group(job):
    uid = sample.share_unique_id(job.rank, sample.id_file("init_missing_rank", "eval"))
    return ncclpy.comm_init_rank(job.world, uid, job.rank)


def main():
    job = sample.start("init_missing_rank")
    eval_enabled = job.healthy or job.rank != job.world - 1
    grads = ncclpy.buffer(4096, 1.0)
    evaluation = None
    for step in range(STEPS):
        if step == WARMUP_STEPS and eval_enabled:
            evaluation = build_eval_group(job)
        train_step(job.comm, grads)
    if evaluation is not None:
        ncclpy.comm_destroy(evaluation)
    sample.finish(job)


if __name__ == "__main__":
    main()
