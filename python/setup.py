"""Builds the ncclrec wheel from the staging copy of python/ that scripts/wheel.sh fills: the
installed tree in ncclrec/_bundle/, ncclrec/_version.py, and setup.cfg with the platform tag
(scripts/wheel_tag.py). Metadata is in pyproject.toml. Build with scripts/wheel.sh OUTDIR."""
import os
import sys

from setuptools import Distribution, setup

try:
    from setuptools.command.bdist_wheel import bdist_wheel  # setuptools 70 and later
except ImportError:
    from wheel.bdist_wheel import bdist_wheel  # Debian 12: python3-wheel

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLE = os.path.join(HERE, "ncclrec", "_bundle")


class NativeDistribution(Distribution):
    """It carries native files for one platform: its files go to platlib, as an extension's."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """Python code for any Python 3 and native programs for one platform, none of them a Python
    extension: the tag is py3-none-PLATFORM (no Python ABI), PLATFORM from setup.cfg."""

    def get_tag(self):
        return "py3", "none", self.plat_name.replace("-", "_").replace(".", "_")


def bundle_files():
    """Every file of ncclrec/_bundle/, relative to the package."""
    files = []
    for folder, _, names in os.walk(BUNDLE):
        for name in names:
            files.append(os.path.relpath(os.path.join(folder, name), os.path.dirname(BUNDLE)))
    return sorted(files)


if not os.path.exists(os.path.join(BUNDLE, "lib", "libncclrec.so")):
    sys.exit("setup.py: %s holds no build of ncclrec; build the wheel with scripts/wheel.sh "
             "OUTDIR" % BUNDLE)

setup(package_data={"ncclrec": bundle_files()}, distclass=NativeDistribution,
      cmdclass={"bdist_wheel": PlatformWheel})
