"""A data-parallel loop whose rank 0 saves a checkpoint, and the save all-reduces a checksum: a
collective gated on rank == 0. NCCL pairs collectives by issue order, so rank 0's extra all-reduce
meets the other ranks' next gradient all-reduce, and the job hangs there, somewhere else.
Fix (healthy): every rank takes part in the checksum; only rank 0 writes.

    python3 gated_save.py [faulty|healthy] [handle|global]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ncclpy  # noqa: E402
import sample  # noqa: E402

STEPS = 10
SAVE_STEP = 5


def train_step(comm, grads):
    ncclpy.all_reduce(comm, grads)


def save_checkpoint(comm, rank):
    # The bug: the checksum all-reduce runs where only rank 0 goes.
    checksum = ncclpy.buffer(1, float(rank))
    ncclpy.all_reduce(comm, checksum)
    if rank == 0:
        print("rank %d: checkpoint saved (checksum %.0f)" % (rank, checksum[0]), flush=True)


def main():
    job = sample.start("gated_save")
    grads = ncclpy.buffer(4096, 1.0)
    for step in range(STEPS):
        train_step(job.comm, grads)
        if step == SAVE_STEP and (job.healthy or job.rank == 0):
            save_checkpoint(job.comm, job.rank)
    sample.finish(job)


if __name__ == "__main__":
    main()
