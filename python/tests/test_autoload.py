"""ncclrec._autoload and ncclrec.cli: what `import ncclrec` decides, and the command dispatcher.
The loading itself, with a library that links NCCL, is tests/wheel/import_check.py."""
import io
import os
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

import ncclrec
from ncclrec import _autoload, _bundle, cli

MAPS = """\
55d0c0a00000-55d0c0a2e000 r--p 00000000 08:01 1 /usr/bin/python3.11
7f01e0000000-7f01e0021000 rw-p 00000000 00:00 0
7f01e1000000-7f01e1100000 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libc.so.6
7f01e2000000-7f01e2100000 r-xp 00000000 08:01 3 /opt/nccl/lib/libnccl-net.so
7f01e3000000-7f01e3100000 r-xp 00000000 08:01 4 /opt/my env/lib/libnccl.so.2.21.5
7fff0000-7fff1000 rw-p 00000000 00:00 0 [stack]
"""


class Decide(unittest.TestCase):
    def test_mapped_files(self):
        with tempfile.NamedTemporaryFile("w", suffix=".maps") as f:
            f.write(MAPS)
            f.flush()
            files = _autoload.mapped_files(f.name)
        self.assertEqual(files, ["/usr/bin/python3.11", "/usr/lib/x86_64-linux-gnu/libc.so.6",
                                 "/opt/nccl/lib/libnccl-net.so", "/opt/my env/lib/libnccl.so.2.21.5"])

    def test_decide(self):
        self.assertEqual(_autoload.decide(["/usr/bin/python3", "/lib/libc.so.6"]), ("load", None))
        self.assertEqual(_autoload.decide(["/x/libnccl-net.so"]), ("load", None))  # a plugin
        self.assertEqual(_autoload.decide(["/x/libnccl.so.2"]), ("too late", "/x/libnccl.so.2"))
        self.assertEqual(_autoload.decide(["/x/libnccl.so.2", "/usr/lib/libncclrec.so"]),
                         ("loaded", "/usr/lib/libncclrec.so"))

    def test_own_commands_load_nothing(self):
        own = _autoload.own_command
        self.assertTrue(own(["/venv/bin/ncclrec", "run"], None))
        self.assertTrue(own(["/venv/bin/ncclrec-analyze", "d"], None))
        self.assertTrue(own(["-m"], ["python3", "-m", "ncclrec", "analyze"]))
        self.assertFalse(own(["-m"], ["python3", "-m", "train.main"]))
        self.assertFalse(own(["train.py"], None))
        self.assertFalse(own([], None))
        self.assertFalse(own(None, None))

    def test_this_process_records(self):
        # The unit tests import ncclrec first, before anything loads NCCL.
        self.assertTrue(ncclrec.recording, ncclrec.status)
        self.assertIn(_bundle.shim(), open("/proc/self/maps").read())


class Cli(unittest.TestCase):
    def call(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = cli.main(list(argv))
        return code, out.getvalue(), err.getvalue()

    def test_unknown_command(self):
        code, _, err = self.call("analyse")
        self.assertEqual(code, 2)
        self.assertEqual(err, "ncclrec: unknown command 'analyse' (one of: run, analyze, top, "
                              "watch, cxxrun, path; --help)\n")

    def test_path(self):
        code, out, _ = self.call("path", "shim")
        self.assertEqual((code, out.strip()), (0, _bundle.shim()))
        self.assertTrue(os.path.isfile(out.strip()))
        code, out, _ = self.call("path", "hostnccl")
        self.assertTrue(os.path.isfile(os.path.join(out.strip(), "libnccl.so.2")))
        code, _, err = self.call("path", "nothing")
        self.assertEqual(code, 2)
        self.assertIn("shim, bin, hostnccl, samples, sample-programs", err)

    def test_usage_and_version(self):
        self.assertEqual(self.call()[0], 2)
        code, out, _ = self.call("--help")
        self.assertEqual(code, 0)
        self.assertIn("run [options] -- COMMAND", out)
        code, out, _ = self.call("--version")
        self.assertEqual((code, out), (0, "ncclrec %s\n" % ncclrec.__version__))
        self.assertRegex(ncclrec.__version__, r"^[0-9]+\.[0-9]+\.[0-9]+$")


if __name__ == "__main__":
    unittest.main()
