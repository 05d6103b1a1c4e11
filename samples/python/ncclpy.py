"""A small ctypes binding of the NCCL C API, the way Python projects call NCCL without PyTorch.

It loads libnccl.so.2 (under `cxxrun --nccl=host`, hostnccl's: cxxrun puts its folder first on
LD_LIBRARY_PATH) in one of two styles, both common in the wild:

  handle  lib = ctypes.CDLL("libnccl.so.2"); lib.ncclAllReduce(...): every entry point is looked
          up with dlsym on the library's own handle (vLLM's and SGLang's pynccl).
  global  ctypes.CDLL("libnccl.so.2", RTLD_GLOBAL); ctypes.CDLL(None).ncclAllReduce(...): entry
          points are looked up in the process's global scope, where a preloaded library's come
          first.

Buffers are ctypes arrays (buffer()); the datatype follows the array's element type, the count its
length. Every call is in place, on the communicator's default stream (hostnccl has none). A call
that fails raises NcclError.

The wrappers below (all_reduce(), send(), ...) are the project's plumbing: every call passes
through them whatever its origin, so ncclrec's call site is the user function that called them.
"""
import ctypes
import os

LIBRARY = "libnccl.so.2"
HANDLE = "handle"
GLOBAL = "global"
BINDINGS = (HANDLE, GLOBAL)

# ncclRedOp_t
SUM, PROD, MAX, MIN, AVG = 0, 1, 2, 3, 4

# ncclDataType_t of the ctypes element types a buffer may hold.
_DTYPES = {
    ctypes.c_int32: 2,
    ctypes.c_int64: 4,
    ctypes.c_float: 7,
    ctypes.c_double: 8,
}


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


class NcclError(RuntimeError):
    def __init__(self, call, code):
        self.call = call
        self.code = code
        super().__init__("%s failed: %s (%d)" % (call, error_string(code), code))


_P = ctypes.c_void_p
_SIGNATURES = {
    "ncclGetErrorString": (ctypes.c_char_p, [ctypes.c_int]),
    "ncclGetUniqueId": (ctypes.c_int, [ctypes.POINTER(UniqueId)]),
    "ncclCommInitRank": (ctypes.c_int, [ctypes.POINTER(_P), ctypes.c_int, UniqueId, ctypes.c_int]),
    "ncclCommDestroy": (ctypes.c_int, [_P]),
    "ncclAllReduce": (ctypes.c_int, [_P, _P, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, _P, _P]),
    "ncclBroadcast": (ctypes.c_int, [_P, _P, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, _P, _P]),
    "ncclSend": (ctypes.c_int, [_P, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, _P, _P]),
    "ncclRecv": (ctypes.c_int, [_P, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, _P, _P]),
    "ncclGroupStart": (ctypes.c_int, []),
    "ncclGroupEnd": (ctypes.c_int, []),
}

_lib = None
binding = None


def load(style=None):
    """Loads NCCL in `style` ("handle" or "global"; None: $NCCLPY_BINDING, else "handle")."""
    global _lib, binding
    style = style or os.environ.get("NCCLPY_BINDING") or HANDLE
    if style == HANDLE:
        lib = ctypes.CDLL(LIBRARY)
    elif style == GLOBAL:
        ctypes.CDLL(LIBRARY, mode=ctypes.RTLD_GLOBAL)
        lib = ctypes.CDLL(None)
    else:
        raise ValueError("binding style %r: not one of %s" % (style, ", ".join(BINDINGS)))
    # ctypes looks each name up once, here, and keeps the function on `lib`.
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    _lib = lib
    binding = style


def error_string(code):
    text = _lib.ncclGetErrorString(code) if _lib is not None else None
    return text.decode() if text else "unknown error"


def _check(call, code):
    if code != 0:
        raise NcclError(call, code)


def _dtype(buf):
    try:
        return _DTYPES[buf._type_]
    except (AttributeError, KeyError):
        raise TypeError("not a buffer of a known NCCL datatype: %r" % (buf,)) from None


def buffer(count, value=0.0, ctype=ctypes.c_float):
    """A buffer of `count` elements of `ctype`, each `value`."""
    return (ctype * count)(*([value] * count))


def get_unique_id():
    uid = UniqueId()
    _check("ncclGetUniqueId", _lib.ncclGetUniqueId(ctypes.byref(uid)))
    return uid


def comm_init_rank(world, uid, rank):
    comm = _P()
    _check("ncclCommInitRank", _lib.ncclCommInitRank(ctypes.byref(comm), world, uid, rank))
    return comm


def comm_destroy(comm):
    _check("ncclCommDestroy", _lib.ncclCommDestroy(comm))


def all_reduce(comm, buf, op=SUM):
    _check("ncclAllReduce", _lib.ncclAllReduce(buf, buf, len(buf), _dtype(buf), op, comm, None))


def broadcast(comm, buf, root):
    _check("ncclBroadcast", _lib.ncclBroadcast(buf, buf, len(buf), _dtype(buf), root, comm, None))


def send(comm, buf, peer):
    _check("ncclSend", _lib.ncclSend(buf, len(buf), _dtype(buf), peer, comm, None))


def recv(comm, buf, peer):
    _check("ncclRecv", _lib.ncclRecv(buf, len(buf), _dtype(buf), peer, comm, None))


def group_start():
    _check("ncclGroupStart", _lib.ncclGroupStart())


def group_end():
    _check("ncclGroupEnd", _lib.ncclGroupEnd())


def barrier(comm):
    """Every rank of `comm` waits for every other: an all-reduce of one value, as PyTorch's
    barrier() is on NCCL."""
    all_reduce(comm, buffer(1, 0, ctypes.c_int32))
