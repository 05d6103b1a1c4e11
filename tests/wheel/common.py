"""What the wheel test's steps share: the folders, running a command, failing and skipping."""
import os
import subprocess
import sys

SKIP = 77


class Failure(Exception):
    pass


def skip(reason):
    print("SKIP: " + reason)
    sys.exit(SKIP)


class Paths:
    """The build tree, the source tree and the scratch folder all steps share (ctest fixtures:
    `build` makes it, `venv` installs into it)."""

    def __init__(self, build, source, work):
        self.build = os.path.abspath(build)
        self.source = os.path.abspath(source)
        self.work = os.path.abspath(work)
        self.wheel_file = os.path.join(self.work, "wheel.txt")
        self.venv = os.path.join(self.work, "venv")

    def wheel(self):
        try:
            with open(self.wheel_file) as f:
                return f.read().strip()
        except OSError:
            raise Failure("no wheel: %s is missing (the wheel.build test makes it)"
                          % self.wheel_file)

    def env(self):
        return clean_env()

    def nccl_user_lib(self):
        """A library that links NCCL (tests/wheel/nccl_user.cc)."""
        return os.path.join(self.build, "lib", "libncclrec_test_nccl_user.so")


def clean_env():
    """The environment of every command: this one, less ncclrec's settings and the pip settings
    of the machine, and with Python writing its bytecode (so that the uninstall check sees
    whatever running the package leaves)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("NCCLREC_", "PIP_")) and k not in (
                "LD_PRELOAD", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "VIRTUAL_ENV")}


def run(cmd, check=True, env=None, **kwargs):
    """Runs cmd to its end; with check, a non-zero exit is a Failure with its output."""
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, universal_newlines=True,
                       env=env if env is not None else clean_env(), **kwargs)
    if check and r.returncode != 0:
        raise Failure("%s exited %d:\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r
