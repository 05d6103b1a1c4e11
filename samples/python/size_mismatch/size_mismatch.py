"""Mismatched shapes: every rank builds the model from its own copy of the config, and the last
rank's copy is stale (hidden size 1000 instead of 1024). Its gradient buffer has another length,
so its all-reduce cannot pair with the others' (NCCL may hang or read past the shorter buffer;
hostnccl blocks): every rank waits in the first gradient all-reduce.
Fix (healthy): one config for every rank (broadcast from rank 0), and the parameter count checked
across ranks before training, as DDP does.

    python3 size_mismatch.py [faulty|healthy] [handle|global]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ncclpy  # noqa: E402
import sample  # noqa: E402

STEPS = 4


def hidden_size(stale_config):
    return 1000 if stale_config else 1024


def train_step(comm, grads):
    ncclpy.all_reduce(comm, grads)


def main():
    job = sample.start("size_mismatch")
    stale_config = not job.healthy and job.rank == job.world - 1
    grads = ncclpy.buffer(4 * hidden_size(stale_config), 1.0)
    for _ in range(STEPS):
        train_step(job.comm, grads)
    sample.finish(job)


if __name__ == "__main__":
    main()
