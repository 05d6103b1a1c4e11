"""Python frames recorded by libncclrec.so, checked against traceback.extract_stack().

    record NCCL_LIB OUT.json [--kill]   (run under LD_PRELOAD=libncclrec.so, any CPython 3.9+)
    compare OUT.json FRAMES.txt DEPTH   (FRAMES.txt from print_frames; any python3)

`record` calls NCCL through ctypes (the library loaded RTLD_GLOBAL, entry points looked up in the
global scope, where the preloaded shim's come first) from many kinds of Python context, and for
each call writes the stack Python itself reports at that moment, innermost first. With --kill it
ends with SIGKILL (no exit dump: only the black box is left). `compare` matches each thread's
calls, in order, with the events print_frames printed for that thread.
"""
import json
import sys


def record(lib_path, out_path, kill):
    import asyncio
    import atexit
    import ctypes
    import gc
    import os
    import signal
    import threading
    import traceback

    ctypes.CDLL(lib_path, mode=ctypes.RTLD_GLOBAL)
    api = ctypes.CDLL(None)
    calls = []
    lock = threading.Lock()

    def stack_of_caller():
        # extract_stack(frame) walks from `frame` (nccl() below) outwards; nccl()'s current line
        # is the line of the NCCL call it makes (the same line, on purpose).
        frames = traceback.extract_stack(sys._getframe(1))
        return [[f.filename, f.name, f.lineno] for f in reversed(frames)]

    def nccl(name, *args):
        fn = getattr(api, name)
        entry = {"tid": threading.get_native_id(), "op": name}; entry["stack"] = stack_of_caller(); rc = fn(*args)  # noqa: E702
        with lock:
            calls.append(entry)
        if rc != 0:
            raise RuntimeError("%s returned %d" % (name, rc))

    # One rank: unique id, communicator.
    class UniqueId(ctypes.Structure):
        _fields_ = [("internal", ctypes.c_char * 128)]

    uid = UniqueId()
    nccl("ncclGetUniqueId", ctypes.byref(uid))
    comm = ctypes.c_void_p()
    nccl("ncclCommInitRank", ctypes.byref(comm), 1, uid, 0)
    buf = (ctypes.c_float * 16)()

    def all_reduce():
        nccl("ncclAllReduce", buf, buf, 16, 7, 0, comm, None)

    def poll():
        nccl("ncclBroadcast", buf, buf, 16, 7, 0, comm, None)

    # Nested plain functions.
    def train_step(i):
        all_reduce()
        if i % 2 == 0:
            poll()

    for i in range(4):
        train_step(i)

    # Generators.
    def batches():
        for i in range(3):
            poll()
            yield i

    for _ in batches():
        all_reduce()

    # Coroutines.
    async def inner():
        await asyncio.sleep(0)
        all_reduce()

    async def outer():
        await inner()
        poll()

    asyncio.run(outer())

    # C -> Python -> NCCL: callbacks called from C code.
    sorted([3, 1, 2], key=lambda x: poll() or x)
    list(map(lambda x: all_reduce(), range(2)))

    # Exceptions unwinding.
    class Ctx:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            poll()
            return True

    try:
        raise ValueError("x")
    except ValueError:
        all_reduce()
    finally:
        poll()
    with Ctx():
        raise KeyError("y")

    # Deeper than the recorded depth.
    def recurse(n):
        if n == 0:
            all_reduce()
        else:
            recurse(n - 1)

    recurse(40)

    # A code object freed before the dump.
    namespace = {"poll": poll}
    exec(compile("def gone():\n    poll()\n", "<generated>", "exec"), namespace)
    namespace["gone"]()
    del namespace
    gc.collect()

    # Threads, with code churn (exec, gc) in another thread meanwhile.
    stop = threading.Event()

    def churn():
        n = 0
        while not stop.is_set():
            exec(compile("def f%d(x):\n    return x + %d\n" % (n, n), "<churn%d>" % n, "exec"), {})
            n += 1
            if n % 50 == 0:
                gc.collect()

    def worker(k):
        for i in range(20):
            if (i + k) % 2:
                all_reduce()
            else:
                poll()

    churner = threading.Thread(target=churn, name="churn")
    churner.start()
    workers = [threading.Thread(target=worker, args=(k,), name="w%d" % k) for k in range(3)]
    for t in workers:
        t.start()
    for i in range(50):
        train_step(i)
    for t in workers:
        t.join()
    stop.set()
    churner.join()

    def write():
        with open(out_path + ".tmp", "w") as f:
            json.dump(calls, f)
            f.flush()
            os.fsync(f.fileno())
        os.rename(out_path + ".tmp", out_path)

    if kill:
        write()
        os.kill(os.getpid(), signal.SIGKILL)

    # Interpreter shutdown: an atexit handler calls NCCL (handlers run last registered first).
    atexit.register(write)
    atexit.register(lambda: poll())


def compare(expected_path, frames_path, depth):
    with open(expected_path) as f:
        calls = json.load(f)
    events = []
    with open(frames_path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if fields[0] == "E":
                events.append({"op": fields[2], "tid": int(fields[3]),
                               "truncated": fields[4] == "1", "frames": []})
            elif fields[0] == "F":
                events[-1]["frames"].append([fields[1], fields[2], int(fields[3])])
    by_tid = {}
    for e in events:
        by_tid.setdefault(e["tid"], []).append(e)
    problems = []
    checked = 0
    position = {}
    for call in calls:
        tid = call["tid"]
        k = position.get(tid, 0)
        position[tid] = k + 1
        got_list = by_tid.get(tid, [])
        where = "thread %d call %d (%s)" % (tid, k, call["op"])
        if k >= len(got_list):
            problems.append("%s: not recorded" % where)
            continue
        got = got_list[k]
        if got["op"] != call["op"]:
            problems.append("%s: recorded as %s" % (where, got["op"]))
            continue
        want = call["stack"][:depth]
        if len(call["stack"]) > depth and not got["truncated"]:
            problems.append("%s: %d frames, not marked truncated" % (where, len(call["stack"])))
        if len(got["frames"]) != len(want):
            problems.append("%s: %d frames recorded, %d expected:\n  got  %s\n  want %s" % (
                where, len(got["frames"]), len(want), got["frames"], want))
            continue
        for i, (g, w) in enumerate(zip(got["frames"], want)):
            # 3.11+ record the qualified name, traceback shows the last part.
            if g[0] != w[0] or g[1].split(".")[-1] != w[1] or g[2] != w[2]:
                problems.append("%s frame %d: got %s, want %s" % (where, i, g, w))
                break
        checked += 1
    for tid, got_list in by_tid.items():
        if len(got_list) > position.get(tid, 0):
            problems.append("thread %d: %d events recorded, %d calls made" % (
                tid, len(got_list), position.get(tid, 0)))
    for p in problems[:20]:
        print(p)
    print("%d calls checked, %d problems" % (checked, len(problems)))
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "record":
        record(sys.argv[2], sys.argv[3], "--kill" in sys.argv[4:])
    elif len(sys.argv) == 5 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
