"""ncclrec.run and ncclrec.job: arguments, the run's folder, exit codes, signals, stopping."""
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from contextlib import redirect_stderr

from ncclrec import job, run


class Arguments(unittest.TestCase):
    def test_split(self):
        self.assertEqual(run.split(["--", "torchrun", "--nnodes", "1", "t.py"]),
                         ([], ["torchrun", "--nnodes", "1", "t.py"]))
        self.assertEqual(run.split(["--dir", "d", "--on-hang=wait", "--", "python", "-c", "x"]),
                         (["--dir", "d", "--on-hang=wait"], ["python", "-c", "x"]))
        # Without --: the command starts at the first word that is no option of ours.
        self.assertEqual(run.split(["--nccl", "host", "mpirun", "-np", "2", "a"]),
                         (["--nccl", "host"], ["mpirun", "-np", "2", "a"]))
        self.assertEqual(run.split(["python", "t.py", "--", "x"]), ([], ["python", "t.py", "--",
                                                                        "x"]))

    def test_a_double_dash_of_the_job_stays_the_jobs(self):
        # The first -- is ncclrec's; a later one belongs to the command.
        self.assertEqual(run.split(["--", "python", "t.py", "--", "x"]),
                         ([], ["python", "t.py", "--", "x"]))

    def test_bad_usage_is_one_line_and_exit_2(self):
        for argv in ([], ["--dir", "d"], ["--nccl", "gpu", "--", "x"], ["--bogus", "--", "x"]):
            err = io.StringIO()
            with redirect_stderr(err), self.assertRaises(SystemExit) as e:
                run.main(argv)
            self.assertEqual(e.exception.code, 2, argv)
            self.assertIn("ncclrec run: error:", err.getvalue())

    def test_the_folder(self):
        p = run.parser()
        here = os.getcwd()
        self.assertEqual(run.dump_folder(p.parse_args(["--dir", "x/y"]), {}),
                         os.path.join(here, "x", "y"))
        self.assertEqual(run.dump_folder(p.parse_args(["--run-id", "r1"]), {}),
                         os.path.join(here, "ncclrec-dumps", "r1"))
        self.assertEqual(run.dump_folder(p.parse_args([]), {"NCCLREC_DIR": "/s/n",
                                                            "NCCLREC_RUN_ID": "j9"}), "/s/n/j9")
        name = os.path.basename(run.dump_folder(p.parse_args([]), {}))
        self.assertRegex(name, r"^[0-9]{8}-[0-9]{6}-%d$" % os.getpid())


class Codes(unittest.TestCase):
    def test_exit_code(self):
        self.assertEqual(job.exit_code(0), 0)
        self.assertEqual(job.exit_code(7), 7)
        self.assertEqual(job.exit_code(-signal.SIGTERM), 143)

    def test_dump_wait(self):
        old = os.environ.get("NCCLREC_DUMP_WAIT")
        try:
            os.environ["NCCLREC_DUMP_WAIT"] = "2.5"
            self.assertEqual(job.dump_wait_s(), 2.5)
            os.environ["NCCLREC_DUMP_WAIT"] = "soon"
            self.assertEqual(job.dump_wait_s(), 10.0)  # the watcher says so itself
        finally:
            if old is None:
                os.environ.pop("NCCLREC_DUMP_WAIT", None)
            else:
                os.environ["NCCLREC_DUMP_WAIT"] = old

    def test_how_it_ended(self):
        self.assertEqual(job.how_it_ended(1, []), "exit code 1")
        self.assertEqual(job.how_it_ended(-9, []), "SIGKILL")
        self.assertEqual(job.how_it_ended(130, [signal.SIGINT]), "exit code 130 after SIGINT")


class Processes(unittest.TestCase):
    def test_descendants_and_stop(self):
        # A launcher that ignores SIGTERM and has a child that ignores it too: both are killed
        # after the grace period.
        script = ("import signal, subprocess, sys, time\n"
                  "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                  "subprocess.Popen([sys.executable, '-c', 'import signal, time; "
                  "signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); "
                  "time.sleep(60)'])\n"
                  "time.sleep(60)\n")
        child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
        child.stdout.readline()  # the grandchild runs
        below = job.descendants(child.pid)
        self.assertEqual(len(below), 1)
        grandchild = below[0][0]
        old = job.STOP_GRACE_S
        job.STOP_GRACE_S = 0.5
        try:
            start = time.monotonic()
            job.stop(child)
        finally:
            job.STOP_GRACE_S = old
        self.assertEqual(child.returncode, -signal.SIGKILL)
        self.assertLess(time.monotonic() - start, 10)
        time.sleep(0.2)
        self.assertNotEqual(job.start_time(grandchild), below[0][1])  # gone (or a new process)
        child.stdout.close()

    def test_a_job_that_ends_on_sigterm_is_not_killed(self):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        job.stop(child)
        self.assertEqual(child.returncode, -signal.SIGTERM)

    def test_sigterm_to_ncclrec_goes_on_to_the_job(self):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        signals = job.Signals(child)
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            self.assertEqual(child.wait(timeout=10), -signal.SIGTERM)
            self.assertEqual(signals.received, [signal.SIGTERM])
        finally:
            signals.restore()


class Whole(unittest.TestCase):
    """ncclrec run on commands that call no NCCL: their exit code, the report that says so."""

    def run_ncclrec(self, *argv):
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, "-m", "ncclrec", "run", "--dir", d, "--"] +
                               list(argv), stderr=subprocess.PIPE, universal_newlines=True)
            return r.returncode, r.stderr, d

    def test_the_jobs_exit_code_is_kept(self):
        code, err, d = self.run_ncclrec(sys.executable, "-c", "raise SystemExit(7)")
        self.assertEqual(code, 7, err)
        self.assertIn("ncclrec: recording into %s" % d, err)
        self.assertIn("ncclrec: nothing recorded", err)
        self.assertIn("ncclrec: exit code 7 (the job's own)", err)

    def test_a_job_killed_by_a_signal(self):
        code, err, _ = self.run_ncclrec(sys.executable, "-c",
                                        "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
        self.assertEqual(code, 137, err)
        self.assertIn("the job ended (SIGKILL)", err)

    def test_a_missing_command(self):
        code, err, _ = self.run_ncclrec("/nonexistent/launcher", "x")
        self.assertEqual(code, 127, err)
        self.assertIn("ncclrec: /nonexistent/launcher: command not found", err)


if __name__ == "__main__":
    unittest.main()
