"""Two processes that claim one rank: the job runs on two nodes of two ranks each (played here on
one machine: ranks 0-1 are node 0, ranks 2-3 node 1). After the launcher's default group, the
set-up code makes the data-parallel communicator of all ranks, passing LOCAL_RANK where the global
RANK was meant. The second node's ranks join as ranks 0 and 1 again; NCCL's bootstrap
root stops at the second claim of a rank, nobody joins as ranks 2 and 3, and every member waits in
ncclCommInitRank forever.
Fix (healthy): the communicator rank is the global rank (RANK), not the node-local one.

    python3 local_rank_as_rank.py [faulty|healthy] [handle|global]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ncclpy  # noqa: E402
import sample  # noqa: E402

RANKS_PER_NODE = 2
STEPS = 3


def init_process_group(job):
    local_rank = job.rank % RANKS_PER_NODE
    uid = sample.share_unique_id(job.rank, sample.id_file("local_rank_as_rank", "dp"))
    return ncclpy.comm_init_rank(job.world, uid, job.rank if job.healthy else local_rank)


def train_step(comm, grads):
    ncclpy.all_reduce(comm, grads)


def main():
    job = sample.start("local_rank_as_rank")
    data_parallel = init_process_group(job)
    grads = ncclpy.buffer(4096, 1.0)
    for _ in range(STEPS):
        train_step(data_parallel, grads)
    ncclpy.comm_destroy(data_parallel)
    sample.finish(job)


if __name__ == "__main__":
    main()
