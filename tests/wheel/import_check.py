"""`import ncclrec` as the first import, checked with a library that links NCCL and is loaded
after it, as torch's CUDA library is (libncclrec_test_nccl_user.so, over hostnccl).

    import_check.py first LIB   import ncclrec, then load LIB and call NCCL through it: recording
    import_check.py late LIB    load LIB (and so libnccl.so.2) first, then import ncclrec: too late
    import_check.py preloaded   under LD_PRELOAD of the shim: import ncclrec loads nothing more

Prints one JSON line: what ncclrec said (recording, status) and the library's result. The test
(wheel_test.py) reads the recordings of NCCLREC_DIR with ncclrec-analyze --events.
"""
import sys

mode = sys.argv[1]
if mode == "first":
    import ncclrec  # the first import, as docs/python.md says
import ctypes  # noqa: E402
import json  # noqa: E402

CALLS = 3


def train_step(lib):
    """The Python function the recorded call sites must name."""
    return lib.ncclrecTestAllReduce(CALLS, 16)


result = None
if mode in ("first", "late"):
    lib = ctypes.CDLL(sys.argv[2])  # RTLD_LOCAL, as Python loads extension modules
if mode != "first":
    import ncclrec  # noqa: E402,F811  after the library: too late; or under LD_PRELOAD
if mode in ("first", "late"):
    result = train_step(lib)
maps = open("/proc/self/maps").read()
print(json.dumps({"recording": ncclrec.recording, "status": ncclrec.status, "result": result,
                  "shims_mapped": len({line.split()[-1] for line in maps.splitlines()
                                       if line.endswith("/libncclrec.so")})}))
