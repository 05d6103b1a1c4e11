"""What `ncclrec run` changes in a job's environment and command line so that the shim reaches
every rank, launcher by launcher (docs/launchers.md):

- torchrun, accelerate, deepspeed (one node), python, cxxrun: the workers inherit the
  environment; nothing to change.
- Open MPI's mpirun/mpiexec: forwards to the ranks only the variables named with -x; each of
  ours is named (`-x NAME` passes the value mpirun has).
- Slurm's srun: --export=ALL (the default) passes everything; an explicit --export list gets
  ours added; --export=NONE passes nothing, which is said.
"""
import os
import re
import subprocess

SHIM_NAME = "libncclrec.so"
MPI_LAUNCHERS = ("mpirun", "mpiexec", "orterun")


def preload(existing, shim):
    """LD_PRELOAD with the shim first and what was there kept after it (the shim must come
    before a preloaded libnccl.so.2 to wrap it). Returns (value, the libncclrec.so already
    there or None): one preloaded already (the .deb's, a build tree's) is kept alone."""
    entries = [e for e in re.split(r"[ :]", existing or "") if e]
    for e in entries:
        if os.path.basename(e) == SHIM_NAME:
            return existing, e
    return ":".join([shim] + entries), None


def prepend_path(existing, folder):
    return folder + (":" + existing if existing else "")


def job_environment(environ, shim, dump_dir, run_id=None, hostnccl=None):
    """The job's environment: LD_PRELOAD, NCCLREC_DIR, NCCLREC_RUN_ID (only when given: the
    launcher's own job id, which every node shares, names the run otherwise), hostnccl first on
    LD_LIBRARY_PATH with --nccl=host. Returns (env, the libncclrec.so preloaded already or
    None)."""
    env = dict(environ)
    env["LD_PRELOAD"], kept = preload(environ.get("LD_PRELOAD"), shim)
    env["NCCLREC_DIR"] = dump_dir
    if run_id:
        env["NCCLREC_RUN_ID"] = run_id
    if hostnccl:
        env["LD_LIBRARY_PATH"] = prepend_path(environ.get("LD_LIBRARY_PATH"), hostnccl)
    return env, kept


def passed_names(env):
    """The variables the ranks need from us, in the order they are named to a launcher."""
    names = ["LD_PRELOAD", "NCCLREC_DIR", "NCCLREC_RUN_ID", "LD_LIBRARY_PATH"]
    return [n for n in names if n in env]


def is_open_mpi(program, run=subprocess.run):
    """Whether `program --version` says Open MPI (MPICH's and Intel MPI's mpirun forward the
    whole environment and know no -x)."""
    try:
        r = run([program, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    out = r.stdout.decode("utf-8", "replace") if isinstance(r.stdout, bytes) else str(r.stdout)
    return "Open MPI" in out or "OpenRTE" in out


def export_value(args):
    """srun's --export value and its index in args (-1 when absent)."""
    for i, a in enumerate(args):
        if a.startswith("--export="):
            return a[len("--export="):], i
        if a == "--export" and i + 1 < len(args):
            return args[i + 1], i + 1
    return None, -1


def adapt_command(command, names, open_mpi=is_open_mpi):
    """The command with what its launcher needs to pass `names` to the ranks; and a warning
    (None when there is nothing to say)."""
    program = os.path.basename(command[0])
    if program in MPI_LAUNCHERS and open_mpi(command[0]):
        extra = []
        for n in names:
            extra += ["-x", n]
        return [command[0]] + extra + command[1:], None
    if program == "srun":
        value, i = export_value(command)
        if value is None or value.upper().startswith("ALL"):
            return command, None
        if value.upper() in ("NONE", "NIL"):
            return command, ("srun --export=%s passes no variable to the tasks: %s cannot reach "
                             "them (use --export=ALL)" % (value, ", ".join(names)))
        adapted = list(command)
        joined = value + "," + ",".join(names)
        adapted[i] = "--export=" + joined if adapted[i].startswith("--export=") else joined
        return adapted, None
    return command, None


def _option(args, *flags):
    """The value of the first of `flags` in args (`--flag V` or `--flag=V`), else None."""
    for i, a in enumerate(args):
        for f in flags:
            if a == f and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(f + "="):
                return a[len(f) + 1:]
    return None


def several_nodes(command):
    """Whether the command asks for more than one node, as far as its flags tell."""
    args = command[1:]
    nnodes = _option(args, "--nnodes", "--num_nodes", "--num-nodes", "--num_machines",
                     "--num-machines", "-N", "--nodes")
    if nnodes is not None:
        return nnodes.split(":")[-1] not in ("1", "")
    return _option(args, "-H", "--host", "--hostfile", "-hostfile", "--machinefile") is not None
