"""ncclrec.report: which report.json counts, the live watcher's lock, the closing lines."""
import fcntl
import json
import os
import tempfile
import time
import unittest

from ncclrec import report

HANG = {"reason": "hang", "ranks": [{}, {}, {}, {}],
        "verdict": {"class": "rank_gated_collective",
                    "headline": "rank 0 alone (rank == 0) issued ..."}}


class Reports(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, doc, mtime=None):
        path = os.path.join(self.dir, "report.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        if mtime is not None:
            os.utime(path, (mtime, mtime))

    def test_only_a_report_of_this_run_counts(self):
        self.assertIsNone(report.fresh_report(self.dir, time.time()))
        self.write(HANG, mtime=time.time() - 3600)  # an earlier run's
        self.assertIsNone(report.fresh_report(self.dir, time.time()))
        self.write(HANG)
        doc = report.fresh_report(self.dir, time.time() - 5)
        self.assertTrue(report.is_hang_report(doc))

    def test_a_half_written_report_is_none(self):
        with open(os.path.join(self.dir, "report.json"), "w") as f:
            f.write('{"reason": "ha')
        self.assertIsNone(report.fresh_report(self.dir, time.time() - 5))

    def test_the_watchers_lock(self):
        self.assertFalse(report.watcher_busy(self.dir))  # no lock file: no watcher
        fd = os.open(os.path.join(self.dir, report.WATCH_LOCK), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            self.assertFalse(report.watcher_busy(self.dir))
            fcntl.flock(fd, fcntl.LOCK_EX)
            self.assertTrue(report.watcher_busy(self.dir))
            clock = iter(range(100))
            self.assertFalse(report.wait_for_watcher(self.dir, 3, sleep=lambda s: None,
                                                     clock=lambda: next(clock)))
            fcntl.flock(fd, fcntl.LOCK_UN)
            self.assertTrue(report.wait_for_watcher(self.dir, 3))
        finally:
            os.close(fd)

    def test_summary(self):
        lines = report.summary(HANG, self.dir)
        self.assertEqual(lines[0], "verdict: rank_gated_collective: rank 0 alone (rank == 0) "
                                   "issued ...")
        self.assertEqual(lines[1], "report: %s/report.json (ncclrec analyze %s: the evidence and "
                                   "every rank's stacks)" % (self.dir, self.dir))
        calm = {"ranks": [{}], "verdict": {"class": "no_hang", "headline": "no hang: ..."}}
        self.assertEqual(report.summary(calm, self.dir),
                         ["no hang (1 rank recorded)", "report: %s/report.json" % self.dir])
        empty = {"verdict": None, "warnings": ["%s: no black box or dump" % self.dir]}
        self.assertEqual(report.summary(empty, self.dir)[0],
                         "nothing recorded: no process of the job called NCCL with libncclrec.so "
                         "loaded (%s: no black box or dump)" % self.dir)

    def test_headline(self):
        self.assertEqual(report.headline({"class": "no_hang", "headline": "no_hang: x"}),
                         "no_hang: x")
        self.assertEqual(report.headline({"class": "rank_exited"}), "rank_exited")

    def test_end_report_errors_are_one_line(self):
        out, error = report.end_report("/nonexistent/ncclrec-watch", self.dir, None, "exit code 0")
        self.assertIsNone(out)
        self.assertIn("cannot run /nonexistent/ncclrec-watch", error)


if __name__ == "__main__":
    unittest.main()
