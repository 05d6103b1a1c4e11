"""Uneven inputs: the dataset is cut into contiguous shards of ceil(N / world) samples, so the last
rank's shard is shorter. It runs out of batches, leaves the training loop and exits while the others
enter their next gradient all-reduce, waiting for a rank that is gone.
Fix (healthy): agree on the number of steps before the loop (an all-reduce with MIN of each rank's
batch count), or pad the shards to equal length as PyTorch's DistributedSampler does.

    python3 uneven_data.py [faulty|healthy] [handle|global]
"""
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ncclpy  # noqa: E402
import sample  # noqa: E402

DATASET_SIZE = 22
BATCH_SIZE = 2


def train_step(comm, grads):
    ncclpy.all_reduce(comm, grads)


def agree_on_steps(comm, local_steps):
    steps = ncclpy.buffer(1, local_steps, ctypes.c_int32)
    ncclpy.all_reduce(comm, steps, ncclpy.MIN)
    return steps[0]


def main():
    job = sample.start("uneven_data")
    per_rank = (DATASET_SIZE + job.world - 1) // job.world
    begin = min(DATASET_SIZE, job.rank * per_rank)
    end = min(DATASET_SIZE, begin + per_rank)
    steps = (end - begin) // BATCH_SIZE
    if job.healthy:
        steps = agree_on_steps(job.comm, steps)
    grads = ncclpy.buffer(4096, 1.0)
    for _ in range(steps):
        train_step(job.comm, grads)
    print("rank %d: trained %d steps on samples [%d, %d)" % (job.rank, steps, begin, end), flush=True)
    sample.finish(job)


if __name__ == "__main__":
    main()
