"""Where the wheel's native files are: the installed tree of docs/install.md (the relocatable
tarball's, its bundled libraries included) under ncclrec/_bundle/.

    _bundle/bin/        ncclrec-analyze, ncclrec-top, ncclrec-watch, cxxrun
    _bundle/lib/        libncclrec.so (the shim), libncclrec_dump.so, libncclrec_format.so and the
                        libraries they need beyond glibc and libstdc++
    _bundle/lib/ncclrec/hostnccl/libnccl.so.2    NCCL's API on the CPU (--nccl=host)
    _bundle/lib/ncclrec/samples/                 the C++ sample programs
    _bundle/share/ncclrec/samples/               the samples' sources, the Python ones included

Every native file finds the others relative to itself ($ORIGIN), so the tree works wherever pip
put it. The recorder's own live detection starts bin/ncclrec-watch from ../bin beside the shim.
"""
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bundle")

# The command-line tools, by the name `ncclrec TOOL` and `python -m ncclrec TOOL` give them.
TOOLS = {
    "analyze": "ncclrec-analyze",
    "top": "ncclrec-top",
    "watch": "ncclrec-watch",
    "cxxrun": "cxxrun",
}


class BundleError(Exception):
    """A file the wheel should carry is missing: the installation is broken."""


def path(*parts):
    return os.path.join(ROOT, *parts)


def _existing(p):
    if not os.path.exists(p):
        raise BundleError("%s is missing: this installation of ncclrec is incomplete "
                          "(reinstall the wheel)" % p)
    return p


def shim():
    """libncclrec.so, the library to preload."""
    return _existing(path("lib", "libncclrec.so"))


def tool(name):
    """The executable of a tool, by its program name (ncclrec-analyze, cxxrun, ...)."""
    return _existing(path("bin", name))


def hostnccl_dir():
    """The folder of hostnccl's libnccl.so.2."""
    return os.path.dirname(_existing(path("lib", "ncclrec", "hostnccl", "libnccl.so.2")))


def samples_dir():
    """The samples' sources and expected verdicts (samples/<name>/, samples/python/<name>/)."""
    return _existing(path("share", "ncclrec", "samples"))


def sample_programs_dir():
    """The C++ sample programs (sample_<name>)."""
    return _existing(path("lib", "ncclrec", "samples"))


# `ncclrec path NAME`: the paths a user may need in a launcher's configuration.
PATHS = {
    "shim": shim,
    "bin": lambda: _existing(path("bin")),
    "hostnccl": hostnccl_dir,
    "samples": samples_dir,
    "sample-programs": sample_programs_dir,
}
