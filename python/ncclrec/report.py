"""The report at the end of `ncclrec run`: report.json of the run's folder, as the live watcher
wrote it at a hang, else as `ncclrec-watch --ended` writes it once the job is over (the same
document and the same analyzer: report/hang_report.h). Nothing is analyzed here."""
import fcntl
import json
import os
import subprocess
import time

REPORT = "report.json"
WATCH_LOCK = "ncclrec.watch.lock"  # format/recording_files.h


def fresh_report(dump_dir, since):
    """report.json's document when it was written at or after `since` (time.time()), else
    None (absent, older, or being replaced right now)."""
    path = os.path.join(dump_dir, REPORT)
    try:
        if os.stat(path).st_mtime < since - 1:  # file times may be coarser than the clock
            return None
        with open(path, encoding="utf-8", errors="replace") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def watcher_busy(dump_dir):
    """Whether a live watcher holds the folder's lock (it may be writing its report)."""
    try:
        fd = os.open(os.path.join(dump_dir, WATCH_LOCK), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)  # releases the lock if it was taken


def wait_for_watcher(dump_dir, timeout_s, sleep=time.sleep, clock=time.monotonic):
    """Waits while a watcher holds the lock, at most timeout_s; True when it let go."""
    deadline = clock() + timeout_s
    while watcher_busy(dump_dir):
        if clock() >= deadline:
            return False
        sleep(0.2)
    return True


def end_report(watch, dump_dir, run_id, how, run=subprocess.run):
    """Runs `ncclrec-watch --ended HOW` on the folder: (its printed report, None) or (None, the
    error in one line)."""
    cmd = [watch, "--dir", dump_dir, "--ended", how]
    if run_id:
        cmd += ["--run-id", run_id]
    try:
        r = run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                encoding="utf-8", errors="replace", timeout=300)
    except (OSError, subprocess.SubprocessError) as e:
        return None, "cannot run %s: %s" % (watch, e)
    if r.returncode != 0:
        return None, (r.stderr.strip() or "%s exited %d" % (watch, r.returncode))
    return r.stdout, None


def summary(doc, dump_dir):
    """The closing lines: the verdict (or no hang, or nothing recorded) and where the report
    is."""
    path = os.path.join(dump_dir, REPORT)
    verdict = doc.get("verdict") if isinstance(doc, dict) else None
    if not isinstance(verdict, dict):
        warnings = doc.get("warnings") if isinstance(doc, dict) else None
        why = warnings[0] if warnings else "no recording in %s" % dump_dir
        return ["nothing recorded: no process of the job called NCCL with libncclrec.so loaded "
                "(%s)" % why,
                "report: %s" % path]
    ranks = doc.get("ranks") or []
    if verdict.get("class") == "no_hang":
        return ["no hang (%d rank%s recorded)" % (len(ranks), "" if len(ranks) == 1 else "s"),
                "report: %s" % path]
    return ["verdict: %s" % headline(verdict),
            "report: %s (ncclrec analyze %s: the evidence and every rank's stacks)"
            % (path, dump_dir)]


def is_hang_report(doc):
    return isinstance(doc, dict) and doc.get("reason") == "hang"


def headline(verdict):
    """The verdict's line as ncclrec-analyze prints it: "CLASS: HEADLINE"."""
    cls, text = verdict.get("class") or "", verdict.get("headline") or ""
    if not text or text.startswith(cls + ":"):
        return text or cls
    return "%s: %s" % (cls, text) if cls else text
