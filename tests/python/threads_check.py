"""Every thread of a Python process in the thread snapshot of a dump (issue 16).

    threads_check.py NCCL_LIB   (run under LD_PRELOAD=libncclrec.so, any CPython 3.9+)

Calls NCCL once through ctypes (the shim starts recording), starts three threads that stay put —
a time.sleep poll loop, a pure-Python busy loop that holds the GIL whenever it runs, a consumer
blocked on queue.get(), and a thread that blocks every signal (it cannot answer the snapshot
signal: its Python frames come from the interpreter's thread list) — then asks for a dump with SIGUSR2 and waits for it to be written. The
test (threads_test.sh) reads the dump with `ncclrec-analyze --stacks` and looks for each thread
at its own function.
"""
import ctypes
import glob
import os
import queue
import signal
import sys
import threading
import time

stop = threading.Event()


def poll_loop():
    while not stop.is_set():
        time.sleep(0.01)


def busy_loop():
    n = 0
    while not stop.is_set():
        n += 1
    return n


def consumer(q):
    q.get()


def deaf_waiter():
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    stop.wait()


def main():
    lib = sys.argv[1]
    ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
    api = ctypes.CDLL(None)

    class UniqueId(ctypes.Structure):
        _fields_ = [("internal", ctypes.c_char * 128)]

    uid = UniqueId()
    assert api.ncclGetUniqueId(ctypes.byref(uid)) == 0
    comm = ctypes.c_void_p()
    assert api.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0) == 0
    q = queue.Queue()
    threads = [threading.Thread(target=poll_loop, name="poller"),
               threading.Thread(target=busy_loop, name="spinner"),
               threading.Thread(target=consumer, args=(q,), name="consumer"),
               threading.Thread(target=deaf_waiter, name="deaf")]
    for t in threads:
        t.start()
    time.sleep(0.3)
    dumps = os.environ["NCCLREC_DIR"] + "/*.signal.ncclrec.pb"
    os.kill(os.getpid(), signal.SIGUSR2)
    deadline = time.time() + 20
    while not glob.glob(dumps) and time.time() < deadline:
        time.sleep(0.05)
    stop.set()
    q.put(None)
    for t in threads:
        t.join()
    if not glob.glob(dumps):
        print("no dump after SIGUSR2", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
