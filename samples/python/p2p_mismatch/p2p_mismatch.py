"""A pipeline send with no matching receive: four pipeline stages, one per rank. Each step the first
stage sends the labels to the last one, then the stages pass activations forward micro-batch by
micro-batch. The last batch of the epoch is partial (10 samples, micro-batches of 4): the first
stage rounds the micro-batch count up and sends 3, the next stage rounds down and receives 2. The
third send never completes; the other stages wait in the loss all-reduce.
Fix (healthy): one function computes the micro-batch count for every stage.

    python3 p2p_mismatch.py [faulty|healthy] [handle|global]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ncclpy  # noqa: E402
import sample  # noqa: E402

STEPS = 3
MICRO_BATCH = 4


def send_labels(comm, labels, last):
    ncclpy.send(comm, labels, last)


def recv_labels(comm, labels):
    ncclpy.recv(comm, labels, 0)


def send_activations(comm, act, peer):
    ncclpy.send(comm, act, peer)


def recv_activations(comm, act, peer):
    ncclpy.recv(comm, act, peer)


def log_loss(comm, loss):
    ncclpy.all_reduce(comm, loss)


def main():
    job = sample.start("p2p_mismatch")
    first, last = job.rank == 0, job.rank == job.world - 1
    round_up = not job.healthy and first
    act = ncclpy.buffer(1024, 1.0)
    labels = ncclpy.buffer(16, 0.0)
    for step in range(STEPS):
        batch = 10 if step == STEPS - 1 else 16
        if first:
            send_labels(job.comm, labels, job.world - 1)
        elif last:
            recv_labels(job.comm, labels)
        if round_up:
            micro_batches = (batch + MICRO_BATCH - 1) // MICRO_BATCH
        else:
            micro_batches = batch // MICRO_BATCH
        for _ in range(micro_batches):
            if not first:
                recv_activations(job.comm, act, job.rank - 1)
            if not last:
                send_activations(job.comm, act, job.rank + 1)
        log_loss(job.comm, ncclpy.buffer(1, 1.0))
    sample.finish(job)


if __name__ == "__main__":
    main()
