"""One communicator given two unique ids: the job runs on two nodes of two ranks each (played here
on one machine: ranks 0-1 are node 0, ranks 2-3 node 1). After the launcher's default group, the
set-up code makes the data-parallel communicator of all ranks with an id made where the
node-local rank is 0 and shared through a node-local file, where the global rank 0 was meant:
each node makes its own id, and each half waits in ncclCommInitRank for the two ranks of a 4-rank
communicator that joined the other id. Neither id can ever fill.
Fix (healthy): the job's rank 0 alone makes the id, and every rank reads that one (through the
launcher's store or a shared file system).

    python3 node_local_id.py [faulty|healthy] [handle|global]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ncclpy  # noqa: E402
import sample  # noqa: E402

RANKS_PER_NODE = 2
STEPS = 3


def init_process_group(job):
    node, local_rank = divmod(job.rank, RANKS_PER_NODE)
    if job.healthy:
        maker, path = job.rank == 0, sample.id_file("node_local_id", "job")
    else:
        maker, path = local_rank == 0, sample.id_file("node_local_id", "node%d" % node)
    uid = sample.share_unique_id(job.rank, path, maker=maker)
    return ncclpy.comm_init_rank(job.world, uid, job.rank)


def train_step(comm, grads):
    ncclpy.all_reduce(comm, grads)


def main():
    job = sample.start("node_local_id")
    data_parallel = init_process_group(job)
    grads = ncclpy.buffer(4096, 1.0)
    for _ in range(STEPS):
        train_step(data_parallel, grads)
    ncclpy.comm_destroy(data_parallel)
    sample.finish(job)


if __name__ == "__main__":
    main()
