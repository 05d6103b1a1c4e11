"""torchrun (python3 -m torch.distributed.run) for Debian 12's python3-torch 1.13 on Python 3.11.

That torchrun fails at start on Python 3.11: `Std.from_str("0")` returns None there (an enum
change in 3.11), so the default `--redirects 0` / `--tee 0` are rejected. This wrapper makes
numbers parse as `Std(int(v))` and then runs torchrun unchanged:

    python3 tests/launchers/torchrun.py --standalone --nproc_per_node 4 train.py

With any newer PyTorch, use plain `torchrun` (or `python3 -m torch.distributed.run`): the
wrapper changes nothing there.
"""
import sys

try:
    from torch.distributed.elastic.multiprocessing import api
    from torch.distributed.run import main
except ImportError as e:
    sys.exit("torchrun.py: PyTorch is not importable by %s (%s); on Debian: apt-get install "
             "python3-torch" % (sys.executable, e))

_from_str = api.Std.from_str


def _std_from_str(value):
    if value.isdigit():
        return api.Std(int(value))
    return _from_str(value)


if _from_str("0") is None:
    api.Std.from_str = staticmethod(_std_from_str)

if __name__ == "__main__":
    main()
