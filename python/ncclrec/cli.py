"""`ncclrec COMMAND` and `python -m ncclrec COMMAND`, and the console scripts of the bundled
tools (ncclrec-analyze, ncclrec-top, ncclrec-watch, cxxrun), which run the wheel's programs with
the arguments they were given (the same flags, output and exit codes: docs/analyzer.md,
docs/top.md, docs/launchers.md, docs/cxxrun.md)."""
import os
import sys

from ncclrec import _bundle

USAGE = """usage: ncclrec COMMAND [ARGS ...]   (or python -m ncclrec COMMAND ...)

  run [options] -- COMMAND ...  run a job (torchrun, accelerate, deepspeed, srun, mpirun, python
                                ...) with every rank recorded; the verdict at a hang and at the end
  analyze DIR ...               ncclrec-analyze: the verdict on a run's recordings
  top [DIR]                     ncclrec-top: every rank live
  watch --dir DIR               ncclrec-watch: live hang detection on a folder
  cxxrun ...                    cxxrun: the launcher for C++ programs, with hang supervision
  path NAME                     print a path in the wheel: shim (libncclrec.so, for LD_PRELOAD),
                                bin, hostnccl, samples, sample-programs
  --version                     the version

`ncclrec COMMAND --help` for each. See docs/python.md."""


def exec_tool(program, args):
    """Replaces this process with the bundled program; returns only on failure (exit code)."""
    try:
        path = _bundle.tool(program)
    except _bundle.BundleError as e:
        sys.stderr.write("ncclrec: %s\n" % e)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(path, [path] + list(args))
    except OSError as e:
        sys.stderr.write("ncclrec: cannot run %s: %s\n" % (path, e.strerror))
        return 126


def print_path(args):
    if len(args) != 1 or args[0] not in _bundle.PATHS:
        sys.stderr.write("ncclrec path: give one of %s\n" % ", ".join(_bundle.PATHS))
        return 2
    try:
        print(_bundle.PATHS[args[0]]())
    except _bundle.BundleError as e:
        sys.stderr.write("ncclrec: %s\n" % e)
        return 1
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        sys.stderr.write(USAGE + "\n")
        return 2
    command, rest = argv[0], argv[1:]
    if command in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    if command == "--version":
        from ncclrec import __version__
        print("ncclrec %s" % __version__)
        return 0
    if command == "run":
        from ncclrec import run
        return run.main(rest)
    if command == "path":
        return print_path(rest)
    if command in _bundle.TOOLS:
        return exec_tool(_bundle.TOOLS[command], rest)
    sys.stderr.write("ncclrec: unknown command '%s' (one of: run, %s, path; --help)\n"
                     % (command, ", ".join(_bundle.TOOLS)))
    return 2


# The console scripts of the tools.
def analyze():
    return exec_tool("ncclrec-analyze", sys.argv[1:])


def top():
    return exec_tool("ncclrec-top", sys.argv[1:])


def watch():
    return exec_tool("ncclrec-watch", sys.argv[1:])


def cxxrun():
    return exec_tool("cxxrun", sys.argv[1:])
