"""The job's process under `ncclrec run`: started in ncclrec's own process group (so that a
terminal's Ctrl-C reaches the launcher and its workers as it would without ncclrec), stopped at a
hang with --on-hang=exit, waited for; then the report and the closing lines."""
import os
import signal
import subprocess
import sys
import time

from ncclrec import report

EXIT_HANG = 3  # as cxxrun and ncclrec-analyze at a hang
EXIT_USAGE = 2
EXIT_NOT_EXECUTABLE = 126
EXIT_NOT_FOUND = 127
STOP_GRACE_S = 15  # SIGTERM, then SIGKILL after this long
POLL_S = 0.2


def say(message):
    sys.stderr.write("ncclrec: %s\n" % message)
    sys.stderr.flush()


def exit_code(returncode):
    return 128 - returncode if returncode < 0 else returncode


def how_it_ended(returncode, signals):
    how = ("signal %d" % -returncode) if returncode < 0 else "exit code %d" % returncode
    if returncode < 0:
        try:
            how = signal.Signals(-returncode).name
        except ValueError:
            pass
    if signals:
        how += " after %s" % ", ".join(signal.Signals(s).name for s in signals)
    return how


def terminal_signalled_group():
    """Whether a Ctrl-C on this terminal reached our whole process group, the job included:
    then SIGINT is not passed on a second time."""
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp():
                return True
        except OSError:
            pass
    return False


class Signals:
    """SIGINT, SIGTERM and SIGHUP to ncclrec go on to the job, and ncclrec stays to report."""

    def __init__(self, child):
        self.child = child
        self.received = []
        self.previous = {}
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self.previous[s] = signal.signal(s, self.handle)

    def handle(self, signum, frame):
        self.received.append(signum)
        if signum == signal.SIGINT and terminal_signalled_group():
            return
        try:
            self.child.send_signal(signum)
        except OSError:
            pass

    def restore(self):
        for s, h in self.previous.items():
            signal.signal(s, h)


def start_time(pid):
    """The process's start time (clock ticks since boot), to tell it from a reused pid; None
    when it is gone or a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if len(fields) < 20 or fields[0] in ("Z", "X") else fields[19]


def descendants(pid):
    """(pid, start time) of every process below `pid`, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append((c, start_time(c)))
            todo.append(c)
    return found


def stop(child):
    """SIGTERM to the launcher (it stops its workers, as at a Ctrl-C); SIGKILL to it and to
    whatever it started that is still there after STOP_GRACE_S."""
    below = descendants(child.pid)
    try:
        child.send_signal(signal.SIGTERM)
        child.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
    except OSError:
        pass
    deadline = time.monotonic() + 5
    for pid, started in below:
        while start_time(pid) == started and started is not None:
            if time.monotonic() >= deadline:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
                break
            time.sleep(0.1)


def wait(child, dump_dir, started, on_hang):
    """Waits for the job; with on_hang == "exit", stops it once the live watcher's hang report
    is written. Returns (returncode, stopped by us)."""
    while True:
        try:
            return child.wait(timeout=POLL_S), False
        except subprocess.TimeoutExpired:
            pass
        if on_hang == "exit" and report.is_hang_report(report.fresh_report(dump_dir, started)):
            say("stopping the job at the hang (--on-hang=exit; --on-hang=wait leaves it running)")
            stop(child)
            return child.returncode, True


def dump_wait_s():
    """NCCLREC_DUMP_WAIT, how long the live watcher waits for the dumps (recorder.md)."""
    try:
        return max(0.0, float(os.environ.get("NCCLREC_DUMP_WAIT") or 10))
    except ValueError:
        return 10.0


def run(command, env, dump_dir, run_id, watch, on_hang):
    started = time.time()
    sys.stdout.flush()
    try:
        child = subprocess.Popen(command, env=env)
    except FileNotFoundError:
        say("%s: command not found" % command[0])
        return EXIT_NOT_FOUND
    except OSError as e:
        say("%s: %s" % (command[0], e.strerror))
        return EXIT_NOT_EXECUTABLE
    signals = Signals(child)
    try:
        returncode, stopped = wait(child, dump_dir, started, on_hang)
        if not report.wait_for_watcher(dump_dir, dump_wait_s() + 20):
            say("the live watcher of %s is still busy; reporting without it" % dump_dir)
        close(dump_dir, started, run_id, watch, how_it_ended(returncode, signals.received))
    finally:
        signals.restore()
    code = EXIT_HANG if stopped else exit_code(returncode)
    say("exit code %d (%s)" % (code, "ncclrec stopped the hung job" if stopped
                               else "the job's own"))
    return code


def close(dump_dir, started, run_id, watch, how):
    """The report (the live one, else one made now) and the closing lines."""
    say("the job ended (%s)" % how)
    doc = report.fresh_report(dump_dir, started)
    if doc is None:
        printed, error = report.end_report(watch, dump_dir, run_id, how)
        if error:
            say(error)
            return
        doc = report.fresh_report(dump_dir, started) or {}
        verdict = doc.get("verdict")
        if isinstance(verdict, dict) and verdict.get("class") != "no_hang":
            sys.stderr.write(printed)  # the verdict no live detection printed: the evidence too
    for line in report.summary(doc, dump_dir):
        say(line)
