"""ncclrec: a flight recorder and hang diagnoser for NCCL jobs.

    pip install ncclrec-*.whl
    ncclrec run -- torchrun --nproc-per-node 8 train.py

`ncclrec run` records every rank of the job (it preloads the bundled libncclrec.so), prints the
verdict live when the job hangs, and again with the report's path when the job ends. Or, as the
first import of a script:

    import ncclrec   # before torch: the NCCL calls of this process are recorded

`ncclrec.recording` says whether this process records, `ncclrec.status` why, in one line.
`ncclrec analyze|top|watch|cxxrun` (or `python -m ncclrec ...`) run the bundled tools.
See docs/python.md.
"""
from ncclrec import _autoload

try:
    from ncclrec._version import __version__
except ImportError:  # the source tree, not an installed wheel (scripts/wheel.sh writes it)
    __version__ = "unknown"

recording, status = _autoload.activate_on_import()
