"""NCCL bound with ctypes, as vLLM's and SGLang's pynccl do, runs recorded under libncclrec.so.

  ctypes_nccl.py --shim LIB --analyze BIN --nccl LIB --style soname|global [--sanitize NAME]

soname: ctypes.CDLL("libnccl.so.2") (dlopen RTLD_LOCAL) and attribute calls (dlsym on the handle).
global: ctypes.CDLL(path, RTLD_GLOBAL), then the calls through ctypes.CDLL(None).
One rank on hostnccl: ncclGetUniqueId, ncclCommInitRank, ncclAllReduce on host buffers,
ncclCommDestroy. The script runs itself again as a child with the shim preloaded, then reads what
the child recorded with `ncclrec-analyze --events --json`. Exit 0 passed, 1 failed, 77 skipped.
"""

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile

NCCL_FLOAT32 = 7
NCCL_SUM = 0
COUNT = 16


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def child(style, library):
    if style == "soname":
        nccl = ctypes.CDLL("libnccl.so.2")
    else:
        ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)
        nccl = ctypes.CDLL(None)
    comm_t = ctypes.c_void_p
    nccl.ncclGetUniqueId.argtypes = [ctypes.POINTER(UniqueId)]
    nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(comm_t), ctypes.c_int, UniqueId, ctypes.c_int]
    nccl.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                   ctypes.c_int, comm_t, ctypes.c_void_p]
    nccl.ncclCommDestroy.argtypes = [comm_t]
    for fn in (nccl.ncclGetUniqueId, nccl.ncclCommInitRank, nccl.ncclAllReduce,
               nccl.ncclCommDestroy):
        fn.restype = ctypes.c_int

    uid = UniqueId()
    comm = comm_t()
    send = (ctypes.c_float * COUNT)(*[float(i + 1) for i in range(COUNT)])
    recv = (ctypes.c_float * COUNT)()
    results = [nccl.ncclGetUniqueId(ctypes.byref(uid)),
               nccl.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0),
               nccl.ncclAllReduce(send, recv, COUNT, NCCL_FLOAT32, NCCL_SUM, comm, None),
               nccl.ncclCommDestroy(comm)]
    print("results", results, "data", "ok" if list(recv) == list(send) else "wrong", flush=True)
    return 0 if results == [0, 0, 0, 0] and list(recv) == list(send) else 1


def fail(message):
    print("FAILED:", message, flush=True)
    return 1


def parent(args):
    if args.sanitize:
        print("SKIPPED: an uninstrumented python3 cannot take the %s-instrumented shim"
              % args.sanitize)
        return 77
    with tempfile.TemporaryDirectory(prefix="ncclrec-ctypes-") as tmp:
        record_dir = os.path.join(tmp, "rec")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("NCCLREC_", "HOSTNCCL_")) and k != "LD_PRELOAD"}
        env.update({"LD_PRELOAD": args.shim, "NCCLREC_DIR": record_dir,
                    "NCCLREC_COMPLETION": "host",
                    "LD_LIBRARY_PATH": os.path.dirname(args.nccl)})
        run = subprocess.run([sys.executable, __file__, "--child", args.style, args.nccl],
                             env=env, capture_output=True, text=True, timeout=120)
        print(run.stdout, end="")
        print(run.stderr, end="", file=sys.stderr)
        if run.returncode != 0:
            return fail("the ctypes program exited with %d" % run.returncode)
        analyze = subprocess.run([args.analyze, "--events", "--json", record_dir],
                                 capture_output=True, text=True, timeout=60)
        if analyze.returncode != 0:
            return fail("ncclrec-analyze exited with %d: %s" % (analyze.returncode,
                                                               analyze.stderr))
        ranks = json.loads(analyze.stdout)["ranks"]
        if len(ranks) != 1:
            return fail("expected one recorded process, found %d" % len(ranks))
        events = ranks[0]["events"]
        ops = [e["op"] for e in events]
        print("recorded", ops)
        expected = ["ncclGetUniqueId", "ncclCommInitRank", "ncclAllReduce", "ncclCommDestroy"]
        if ops != expected:
            return fail("recorded %s, expected %s" % (ops, expected))
        reduce = events[2]
        if (reduce["count"], reduce["nranks"], reduce["seq"], reduce["state"]) != (
                COUNT, 1, 1, "completed"):
            return fail("the all-reduce was recorded as %s" % reduce)
        if any(e["result_code"] != 0 for e in events):
            return fail("a call was recorded as failed: %s" % events)
    print("PASSED")
    return 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        return child(sys.argv[2], sys.argv[3])
    p = argparse.ArgumentParser()
    p.add_argument("--shim", required=True)
    p.add_argument("--analyze", required=True)
    p.add_argument("--nccl", required=True)
    p.add_argument("--style", choices=["soname", "global"], required=True)
    p.add_argument("--sanitize", default="")
    return parent(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
