"""Ranks that disagree on the size of a communicator: the job makes an evaluation communicator of
all ranks, sized by each rank from its own copy of the run config; rank 1's copy still says one
rank fewer. NCCL's bootstrap root keeps the first size it hears and stops at the first that
differs: every member waits in ncclCommInitRank forever.
Fix (healthy): pass the same nranks (the job's size, or the group's from one shared config) on
every member.

    python3 init_world_size.py [faulty|healthy] [handle|global]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ncclpy  # noqa: E402
import sample  # noqa: E402

STEPS = 3


def train_step(comm, grads):
    ncclpy.all_reduce(comm, grads)


def build_eval_group(job, configured):
    uid = sample.share_unique_id(job.rank, sample.id_file("init_world_size", "eval"))
    return ncclpy.comm_init_rank(configured, uid, job.rank)


def main():
    job = sample.start("init_world_size")
    # The size each rank's copy of the config gives; rank 1's predates the last rank's arrival.
    stale = not job.healthy and job.rank == 1
    configured = job.world - 1 if stale else job.world
    grads = ncclpy.buffer(4096, 1.0)
    train_step(job.comm, grads)
    evaluation = build_eval_group(job, configured)
    for _ in range(STEPS):
        train_step(evaluation, grads)
    ncclpy.comm_destroy(evaluation)
    sample.finish(job)


if __name__ == "__main__":
    main()
