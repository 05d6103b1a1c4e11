"""A communicator created lazily by the first collective on a group, as PyTorch's
ProcessGroupNCCL does: `Group.all_reduce` makes its communicator the first time it is used. The
job logs metrics over a group of all ranks every other step; the last rank logs only when its own
loss improved, so at the first logging step it skips the group's first all-reduce and goes on to
the next training all-reduce. Ranks 0-2 wait inside the group's creation for it, and it waits in
the training all-reduce for them.
Fix (healthy): a collective on a group is issued by every member, whatever its own data says
(reduce a flag instead of skipping the call).

    python3 lazy_group_skip.py [faulty|healthy] [handle|global]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ncclpy  # noqa: E402
import sample  # noqa: E402

STEPS = 4


class Group:
    """A process group whose communicator is made at its first collective."""

    def __init__(self, job, name):
        self.job = job
        self.name = name
        self.comm = None

    def all_reduce(self, buf):
        if self.comm is None:
            uid = sample.share_unique_id(self.job.rank, sample.id_file("lazy_group_skip", self.name))
            self.comm = ncclpy.comm_init_rank(self.job.world, uid, self.job.rank)
        ncclpy.all_reduce(self.comm, buf)


def train_step(comm, grads):
    ncclpy.all_reduce(comm, grads)


def log_metrics(group, values):
    group.all_reduce(values)


def main():
    job = sample.start("lazy_group_skip")
    metrics = Group(job, "metrics")
    grads = ncclpy.buffer(4096, 1.0)
    values = ncclpy.buffer(8, 1.0)
    for step in range(STEPS):
        train_step(job.comm, grads)
        improved = job.healthy or job.rank != job.world - 1
        if step % 2 == 1 and improved:
            log_metrics(metrics, values)
    if metrics.comm is not None:
        ncclpy.comm_destroy(metrics.comm)
    sample.finish(job)


if __name__ == "__main__":
    main()
