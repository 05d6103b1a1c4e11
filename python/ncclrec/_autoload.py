"""`import ncclrec` as the first import of a script: recording without LD_PRELOAD.

The shim (libncclrec.so) is loaded into the process's global scope (RTLD_GLOBAL). A library
loaded after it that calls NCCL through the dynamic linker -- PyTorch's libtorch_cuda.so, an
extension linked with libnccl.so.2, a ctypes binding in the global style -- has its calls to
ncclAllReduce & co. bound to the first definition in the global scope, the shim's, whatever
scope libnccl.so.2 itself lands in; the shim then finds the real NCCL in the process and forwards
to it. A library loaded before the shim was bound to NCCL already: that is the "too late" case,
said once, and nothing is loaded then (a process recorded in part would give a wrong verdict).

What this cannot reach (docs/python.md, "import ncclrec"): ctypes bindings in the handle style
(CDLL("libnccl.so.2").ncclAllReduce: dlsym on NCCL's own handle goes to libc's dlsym, which comes
before the shim's in the global scope; LD_PRELOAD puts the shim first), NCCL linked statically,
and other processes (children the script starts with subprocess get nothing; `ncclrec run` and
LD_PRELOAD reach every process of the job).
"""
import ctypes
import os
import sys

from ncclrec import _bundle

SHIM_NAME = "libncclrec.so"


def mapped_files(maps_path="/proc/self/maps"):
    """The files mapped into this process (shared libraries among them), in map order."""
    seen = []
    with open(maps_path) as f:
        for line in f:
            fields = line.split(None, 5)
            if len(fields) == 6:
                name = fields[5].strip()
                if name.startswith("/") and name not in seen:
                    seen.append(name)
    return seen


def is_nccl(path):
    """libnccl.so, libnccl.so.2, libnccl.so.2.21.5 (not libnccl-net.so, a plugin)."""
    return os.path.basename(path).startswith("libnccl.so")


def decide(mapped):
    """What to do in a process with these files mapped: ("loaded", path) when a libncclrec.so is
    there already (LD_PRELOAD, `ncclrec run`), ("too late", nccl path) when NCCL is, else
    ("load", None)."""
    for p in mapped:
        if os.path.basename(p) == SHIM_NAME:
            return "loaded", p
    for p in mapped:
        if is_nccl(p):
            return "too late", p
    return "load", None


def own_command(argv, orig_argv):
    """True in ncclrec's own commands (the console scripts, `python -m ncclrec`), which import
    the package but run no job: nothing to record there."""
    if not argv:
        return False
    names = ("ncclrec",) + tuple(_bundle.TOOLS.values())
    if os.path.basename(argv[0]) in names:
        return True
    # `python -m ncclrec`: sys.argv[0] is "-m" while the package is imported; sys.orig_argv
    # (3.10+) says which module runs. On 3.9 the shim is loaded there too: it does nothing
    # until an NCCL call, and the process only execs a tool.
    if argv[0] == "-m" and orig_argv:
        for i, a in enumerate(orig_argv[:-1]):
            if a == "-m":
                return orig_argv[i + 1] == "ncclrec"
    return False


def _say(message):
    sys.stderr.write("ncclrec: %s\n" % message)
    sys.stderr.flush()


def activate():
    """Loads the shim when it can; returns (recording, status), the status in one line. Says on
    stderr, once per process (the import runs once), when recording is not possible."""
    try:
        mapped = mapped_files()
    except OSError as e:
        status = "not recording: cannot read /proc/self/maps (%s)" % e.strerror
        _say(status)
        return False, status
    what, path = decide(mapped)
    if what == "loaded":
        return True, "recording: %s was already loaded (LD_PRELOAD)" % path
    if what == "too late":
        status = ("too late to record this process: NCCL (%s) was loaded before `import "
                  "ncclrec`; make `import ncclrec` the first import of the script (before torch), "
                  "or start the job with `ncclrec run -- ...`" % path)
        _say(status)
        return False, status
    try:
        shim = _bundle.shim()
        ctypes.CDLL(shim, mode=ctypes.RTLD_GLOBAL)
    except (OSError, _bundle.BundleError) as e:
        status = "not recording: cannot load the shim: %s" % e
        _say(status)
        return False, status
    return True, "recording: %s loaded into the global scope" % shim


def activate_on_import():
    if own_command(getattr(sys, "argv", None), getattr(sys, "orig_argv", None)):
        return False, "not recording: ncclrec's own command"
    return activate()
