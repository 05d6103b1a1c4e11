"""What every Python sample shares, so that each one shows only its bug (samples/common/sample.h
for the C++ samples): the mode, the binding style, the rank and world size from the launcher
(RANK and WORLD_SIZE as cxxrun and torchrun set them, or mpirun's and srun's own), the ncclUniqueId
exchange through a file, and the job's communicator.

Every sample runs as `python3 <name>.py [faulty|healthy] [handle|global]`: `faulty` (the default)
has the bug, `healthy` is the same program with the fix and runs to completion; the second argument
picks how ncclpy reaches NCCL (default: $NCCLPY_BINDING, else handle).
"""
import ctypes
import os
import sys
import tempfile
import time

import ncclpy

MODES = ("faulty", "healthy")


class Job:
    def __init__(self, rank, world, healthy, comm):
        self.rank = rank
        self.world = world
        self.healthy = healthy  # run the fixed program
        self.comm = comm


def share_unique_id(rank, path, timeout_s=60.0, maker=None):
    """Rank 0 (or the rank for which `maker` is true) makes the id and publishes it at `path`
    atomically (temporary name, then rename); the others wait for the file. Give every run a
    fresh path."""
    if (rank == 0) if maker is None else maker:
        uid = ncclpy.get_unique_id()
        tmp = "%s.tmp.%d" % (path, os.getpid())
        with open(tmp, "wb") as f:
            f.write(bytes(uid))
        os.rename(tmp, path)
        return uid
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with open(path, "rb") as f:
                data = f.read()
            if len(data) == ctypes.sizeof(ncclpy.UniqueId):
                return ncclpy.UniqueId.from_buffer_copy(data)
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    sys.exit("rank %d: no unique id at %s after %.0f s (is its maker running?)"
             % (rank, path, timeout_s))


def launcher_rank():
    """The rank as the launcher gives it: torchrun and cxxrun (RANK), OpenMPI's mpirun
    (OMPI_COMM_WORLD_RANK), Slurm's srun (SLURM_PROCID)."""
    env = os.environ
    return int(env.get("RANK") or env.get("OMPI_COMM_WORLD_RANK") or env.get("SLURM_PROCID") or 0)


def launcher_world_size():
    env = os.environ
    return int(env.get("WORLD_SIZE") or env.get("OMPI_COMM_WORLD_SIZE") or env.get("SLURM_NTASKS")
               or 1)


def launcher_job_key():
    """A name for this run of the job that every rank computes alike and the next run does not
    share: torchrun's and cxxrun's run id and port (a run id given twice still gets a fresh
    port), mpirun's job id, Slurm's job and step ids; "local" without a launcher."""
    env = os.environ
    if env.get("TORCHELASTIC_RUN_ID"):
        return "%s-%s-%s" % (env["TORCHELASTIC_RUN_ID"], env.get("MASTER_PORT", "0"),
                             env.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if env.get("OMPI_MCA_ess_base_jobid"):
        return "mpi-" + env["OMPI_MCA_ess_base_jobid"]
    if env.get("SLURM_JOB_ID"):
        return "slurm-%s.%s" % (env["SLURM_JOB_ID"], env.get("SLURM_STEP_ID", "0"))
    return "local"


def id_file(name, purpose=None):
    """$NCCLREC_SAMPLE_ID_FILE, else a name of this program and run in the temporary folder. A
    program that makes more than one id names each by `purpose`, which extends either path."""
    path = os.environ.get("NCCLREC_SAMPLE_ID_FILE") or os.path.join(
        tempfile.gettempdir(), "ncclrec-py-%s-%s.id" % (name, launcher_job_key()))
    return path if purpose is None else "%s.%s" % (path, purpose)


def parse(name, argv=None):
    """Parses the arguments and loads NCCL, with no communicator yet (for the samples whose bug is
    in making it). A bad argument ends the process with exit code 2 and a usage line."""
    args = list(sys.argv[1:] if argv is None else argv)
    mode = args[0] if args else "faulty"
    style = args[1] if len(args) > 1 else None
    if len(args) > 2 or mode not in MODES or (style is not None and style not in ncclpy.BINDINGS):
        print("usage: %s [faulty|healthy] [handle|global] (got %s)" % (name, " ".join(args)),
              file=sys.stderr)
        sys.exit(2)
    rank = launcher_rank()
    world = launcher_world_size()
    ncclpy.load(style)
    if rank == 0:
        print("%s (%s): NCCL through ctypes, %s style" % (name, mode, ncclpy.binding), flush=True)
    return Job(rank, world, mode == "healthy", None)


def start(name, argv=None):
    """parse(), then the job's communicator of all ranks, and a wait until every rank has joined
    it (a barrier, as scripts do after init_process_group)."""
    job = parse(name, argv)
    job.comm = ncclpy.comm_init_rank(job.world, share_unique_id(job.rank, id_file(name)), job.rank)
    ncclpy.barrier(job.comm)
    return job


def finish(job):
    ncclpy.comm_destroy(job.comm)
    print("rank %d: finished" % job.rank, flush=True)
