"""A collective behind a data-dependent condition: each rank all-reduces its loss for the log only
while its own loss is above a threshold. Rank 3 gets easier batches; its loss drops under the
threshold first and it skips the all-reduce the others issue. Its next gradient all-reduce meets
their loss all-reduce (another length): every rank waits.
Fix (healthy): the collective is issued unconditionally (or the condition is decided on a value
every rank shares).

    python3 skipped_collective.py [faulty|healthy] [handle|global]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ncclpy  # noqa: E402
import sample  # noqa: E402

STEPS = 6
REPORT_ABOVE = 0.3


def train_step(comm, grads):
    ncclpy.all_reduce(comm, grads)


def log_loss(comm, loss):
    ncclpy.all_reduce(comm, loss)


def main():
    job = sample.start("skipped_collective")
    difficulty = 0.5 if job.rank == job.world - 1 else 1.0
    grads = ncclpy.buffer(4096, 1.0)
    for step in range(STEPS):
        train_step(job.comm, grads)
        loss = difficulty / (step + 1)
        if job.healthy or loss > REPORT_ABOVE:
            log_loss(job.comm, ncclpy.buffer(1, loss))
    sample.finish(job)


if __name__ == "__main__":
    main()
