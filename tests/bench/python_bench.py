"""Time one ctypes NCCL call (ncclAllReduce of 16 floats on a one-rank communicator) made
`depth` Python frames deep. Prints "ns_per_call N". Used by run_python_bench.sh.

    python3 python_bench.py NCCL_LIB DEPTH CALLS
"""
import ctypes
import sys
import time


def main():
    lib_path, depth, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ctypes.CDLL(lib_path, mode=ctypes.RTLD_GLOBAL)
    api = ctypes.CDLL(None)

    class UniqueId(ctypes.Structure):
        _fields_ = [("internal", ctypes.c_char * 128)]

    uid = UniqueId()
    comm = ctypes.c_void_p()
    assert api.ncclGetUniqueId(ctypes.byref(uid)) == 0
    assert api.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0) == 0
    buf = (ctypes.c_float * 16)()
    all_reduce = api.ncclAllReduce
    all_reduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                           ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]

    def loop(n):
        start = time.perf_counter_ns()
        for _ in range(n):
            all_reduce(buf, buf, 16, 7, 0, comm, None)
        return time.perf_counter_ns() - start

    def nest(level):
        # `depth` frames in all: this one per level, then loop().
        if level > 2:
            return nest(level - 1)
        return loop(calls)

    loop(1000)  # warm up: code objects recorded, stacks interned
    best = min(nest(depth) for _ in range(5))
    print("ns_per_call %.1f" % (best / calls))


if __name__ == "__main__":
    main()
