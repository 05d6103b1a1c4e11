"""ncclrec run [--dir DIR] [--run-id ID] [--nccl system|host] [--on-hang exit|wait] [--] COMMAND...

Runs COMMAND -- torchrun, accelerate launch, deepspeed, srun, mpirun, python, any program --
with the wheel's libncclrec.so preloaded into every process it starts, and the recordings in one
folder of this run. A rank that stalls starts the live watcher, which prints the verdict on the
job's stderr within seconds of a hang; then (--on-hang=exit, the default) the job is stopped.
When the job ends, the verdict (or "no hang") and the path of report.json are printed.

Exit code: the job's own (128 + N when it ended by signal N, as a shell says); 3 when ncclrec
stopped it at a hang (--on-hang=exit); 2 bad usage, 126/127 COMMAND not executable/not found.
"""
import argparse
import os
import time

from ncclrec import _bundle, job, launchers
from ncclrec.job import EXIT_USAGE, say


def parser():
    p = argparse.ArgumentParser(
        prog="ncclrec run", usage="ncclrec run [options] [--] COMMAND ...",
        description=__doc__.split("\n\n")[1],
        epilog=__doc__.split("\n\n")[2] + "\nSee docs/python.md and docs/launchers.md.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", help="the folder for this run's recordings (default: "
                   "./ncclrec-dumps/RUN, or $NCCLREC_DIR/RUN when NCCLREC_DIR is set); "
                   "several nodes: one path they all share")
    p.add_argument("--run-id", help="the run's id, the same on every node (default: "
                   "$NCCLREC_RUN_ID, else the launcher's job id; the folder is named after it, "
                   "else after the time and this process)")
    p.add_argument("--nccl", choices=("system", "host"), default="system",
                   help="host: the ranks load the bundled hostnccl (NCCL's API on the CPU) "
                   "instead of the system's libnccl.so.2 (default: system)")
    p.add_argument("--on-hang", choices=("exit", "wait"), default="exit",
                   help="exit: stop the job once the verdict of a hang is out (default); wait: "
                   "leave it running")
    return p


def split(argv):
    """(ncclrec run's own arguments, COMMAND): COMMAND starts after the `--` that ends our
    options, else at the first argument that is no option of ours."""
    with_value = ("--dir", "--run-id", "--nccl", "--on-hang")
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        i += 2 if argv[i] in with_value else 1
    if i < len(argv) and argv[i] == "--":
        return argv[:i], argv[i + 1:]
    return argv[:i], argv[i:]


def default_run_name(now=None, pid=None):
    now = time.localtime(now)
    return time.strftime("%Y%m%d-%H%M%S", now) + "-%d" % (os.getpid() if pid is None else pid)


def dump_folder(args, environ):
    if args.dir:
        return os.path.abspath(args.dir)
    run = args.run_id or environ.get("NCCLREC_RUN_ID") or default_run_name()
    parent = environ.get("NCCLREC_DIR") or "ncclrec-dumps"
    return os.path.abspath(os.path.join(parent, run))


def main(argv):
    own, command = split(list(argv))
    p = parser()
    args = p.parse_args(own)  # exits 2 with one line on a bad option, 0 on --help
    if not command:
        p.error("no command to run: ncclrec run [options] -- COMMAND ...")
    try:
        shim = _bundle.shim()
        watch = _bundle.tool("ncclrec-watch")
        hostnccl = _bundle.hostnccl_dir() if args.nccl == "host" else None
    except _bundle.BundleError as e:
        say(str(e))
        return EXIT_USAGE
    if any(c in shim for c in " :"):
        say("the shim's path has a space or a colon, which LD_PRELOAD cannot hold: %s "
            "(install ncclrec into an environment whose path has neither)" % shim)
        return EXIT_USAGE
    dump_dir = dump_folder(args, os.environ)
    try:
        os.makedirs(dump_dir, mode=0o700, exist_ok=True)
    except OSError as e:
        say("cannot create %s: %s" % (dump_dir, e.strerror))
        return EXIT_USAGE
    run_id = args.run_id or os.environ.get("NCCLREC_RUN_ID")
    env, kept = launchers.job_environment(os.environ, shim, dump_dir, run_id, hostnccl)
    command, warning = launchers.adapt_command(command, launchers.passed_names(env))
    if kept:
        say("LD_PRELOAD already holds %s: that one records, not the wheel's" % kept)
    if warning:
        say(warning)
    announce(dump_dir, command, hostnccl)
    return job.run(command, env, dump_dir, run_id, watch, args.on_hang)


def announce(dump_dir, command, hostnccl):
    if any(name.endswith(".bbox") for name in os.listdir(dump_dir)):
        say("%s already holds recordings: this run's will mix with them (give a fresh --dir)"
            % dump_dir)
    say("recording into %s; the verdict comes at a hang, and again when the job ends%s"
        % (dump_dir, " (NCCL: hostnccl from %s)" % hostnccl if hostnccl else ""))
    if launchers.several_nodes(command):
        say("several nodes: %s must be a folder every node shares (give --dir), else copy each "
            "node's folder to one machine and run `ncclrec analyze DIR1 DIR2 ...` "
            "(docs/launchers.md)" % dump_dir)
