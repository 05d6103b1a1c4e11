"""The gated_save sample, C++ and Python, from the installed wheel, through `ncclrec run` under
Debian's torchrun (tests/launchers/torchrun.py) and OpenMPI's mpirun, on hostnccl (--nccl=host):

  faulty     the default --on-hang=exit: the live verdict, the job stopped, exit code 3, the
             closing verdict and report.json's verdict as the sample's expected.json says
  healthy    exit 0, "no hang (4 ranks recorded)", no live-detection line
  interrupt  --on-hang=wait: after the live verdict, SIGINT to ncclrec (as a CI cancel sends
             it); the job ends with its own exit code and the closing verdict is the same
  ctrlc      the same with Ctrl-C typed on a terminal (a pty), which reaches ncclrec, the launcher
             and its ranks at once (ncclrec passes SIGINT on only when it did not come so)

The faulty torchrun Python run is the issue's check: the wheel and a Python environment, then one
command, with the folder of the recordings left to its default.
"""
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time

from common import Failure, run, skip

HERE = os.path.dirname(os.path.abspath(__file__))
RANKS = 4
TIMEOUT_S = 150


def ncclrec_path(venv, name):
    return run([os.path.join(venv, "bin", "ncclrec"), "path", name]).stdout.strip()


def program(venv, lang, sample_mode):
    """The sample's command line and expected.json, from the wheel's files."""
    samples = ncclrec_path(venv, "samples")
    if lang == "cxx":
        exe = os.path.join(ncclrec_path(venv, "sample-programs"), "sample_gated_save")
        return [exe, sample_mode], os.path.join(samples, "gated_save", "expected.json")
    script = os.path.join(samples, "python", "gated_save", "gated_save.py")
    return ([os.path.join(venv, "bin", "python"), script, sample_mode],
            os.path.join(samples, "python", "gated_save", "expected.json"))


def launch_command(p, launcher, lang, prog, venv):
    python = os.path.join(venv, "bin", "python")
    if launcher == "torchrun":
        probe = run([python, "-c", "import torch.distributed.run"], check=False)
        if probe.returncode != 0:
            skip("torchrun: %s cannot import torch.distributed.run (Debian: apt-get install "
                 "python3-torch)" % python)
        head = [python, os.path.join(p.source, "tests", "launchers", "torchrun.py"),
                "--standalone", "--nproc_per_node", str(RANKS)]
        return head + (prog[1:] if lang == "python" else ["--no_python"] + prog)
    if shutil.which("mpirun") is None:
        skip("mpirun: not installed (Debian: apt-get install openmpi-bin)")
    cmd = ["mpirun", "--oversubscribe", "-np", str(RANKS)]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd + prog


def check_verdict(verdict, expected_path):
    """The sample's expected.json, checked as tests/launchers does."""
    sys.path.insert(0, os.path.join(HERE, "..", "launchers"))
    import launcher_test
    try:
        launcher_test.check_verdict(verdict, expected_path)
    except launcher_test.Failure as e:
        raise Failure(str(e))


def lines_of(log):
    with open(log, errors="replace") as f:
        return [l.rstrip("\n") for l in f]


def said(lines, prefix):
    return [l[len(prefix):] for l in lines if l.startswith(prefix)]


def wait_for(proc, log, predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while not predicate(lines_of(log)):
        if proc.poll() is not None:
            raise Failure("ncclrec run ended (exit %d) before %s" % (proc.returncode, what))
        if time.monotonic() > deadline:
            raise Failure("no %s in %.0f s" % (what, timeout_s))
        time.sleep(0.1)


def run_job(p, launcher, lang, mode, venv=None):
    venv = venv or p.venv
    work = os.path.join(p.work, "job-%s-%s-%s-%s" % (launcher, lang, mode, os.path.basename(venv)))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    prog, expected = program(venv, lang, "healthy" if mode == "healthy" else "faulty")
    opts = ["--nccl", "host"] + (["--on-hang", "wait"] if mode in ("interrupt", "ctrlc") else [])
    cmd = [os.path.join(venv, "bin", "ncclrec"), "run"] + opts + ["--"] + launch_command(
        p, launcher, lang, prog, venv)
    print("$ " + " ".join(cmd), flush=True)
    log = os.path.join(work, "ncclrec.log")
    start = time.monotonic()
    if mode == "ctrlc":
        code = on_a_terminal(cmd, work, p.env(), log)
        lines = [l[2:] if l.startswith("^C") else l for l in lines_of(log)]
        return check_output(lines, code, "interrupt", work, expected, time.monotonic() - start)
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=work, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=p.env(), start_new_session=True)
    try:
        if mode == "interrupt":
            wait_for(proc, log, lambda ls: any("; report: " in l for l in ls), TIMEOUT_S,
                     "live verdict")
            os.kill(proc.pid, signal.SIGINT)
        try:
            code = proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise Failure("ncclrec run did not end in %d s" % TIMEOUT_S)
        check_output(lines_of(log), code, mode, work, expected, time.monotonic() - start)
    except Failure:
        sys.stderr.write("--- ncclrec run's output (last 60 lines)\n")
        sys.stderr.write("\n".join(lines_of(log)[-60:]) + "\n")
        raise
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def on_a_terminal(cmd, work, env, log):
    """Runs cmd as the foreground job of a new terminal (a pty), types Ctrl-C once the live
    verdict is out, and returns its exit code; its output goes to log."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a session leader whose controlling terminal is the pty
        try:
            os.chdir(work)
            os.execve(cmd[0], cmd, env)
        finally:
            os._exit(127)
    out, typed, deadline = b"", False, time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if select.select([fd], [], [], 0.1)[0]:
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: every process of the terminal has ended
                data = b""
            if not data:
                break
            out += data
        if not typed and b"; report: " in out:
            os.write(fd, b"\x03")
            typed = True
    with open(log, "wb") as f:
        f.write(out.replace(b"\r\n", b"\n"))
    if time.monotonic() >= deadline:
        os.kill(pid, signal.SIGKILL)
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    if not typed:
        raise Failure("no live verdict on the terminal")
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def check_output(lines, code, mode, work, expected, took):
    into = said(lines, "ncclrec: recording into ")
    if len(into) != 1:
        raise Failure("%d 'recording into' lines, not one" % len(into))
    folder = into[0].split(";")[0]
    if not re.match(re.escape(os.path.join(work, "ncclrec-dumps")) + r"/[0-9]{8}-[0-9]{6}-[0-9]+$",
                    folder):
        raise Failure("the recordings went to %s, not ./ncclrec-dumps/RUN" % folder)
    reports = said(lines, "ncclrec: report: ")
    if len(reports) != 1 or not reports[0].startswith(os.path.join(folder, "report.json")):
        raise Failure("closing report lines: %s" % reports)
    with open(os.path.join(folder, "report.json")) as f:
        doc = json.load(f)
    live = [l for l in lines if l.startswith("ncclrec: hang (")]
    if mode == "healthy":
        if code != 0 or live or "ncclrec: no hang (%d ranks recorded)" % RANKS not in lines:
            raise Failure("healthy: exit %d, live lines %s" % (code, live))
        print("ok: exit 0 after %.1f s, no hang, report %s" % (took, reports[0].split()[0]))
        return
    if len(live) != 1:
        raise Failure("%d live hang lines, not one" % len(live))
    check_verdict(doc.get("verdict") or {}, expected)
    closing = said(lines, "ncclrec: verdict: ")
    want = "%s: %s" % (doc["verdict"]["class"], doc["verdict"]["headline"])
    if closing != [want]:
        raise Failure("closing verdict %s, report.json's %s" % (closing, doc["verdict"]))
    if mode == "faulty" and code != 3:
        raise Failure("exit code %d after ncclrec stopped the hung job, not 3" % code)
    if mode == "interrupt":
        ended = said(lines, "ncclrec: the job ended (")
        if code in (0, 3) or len(ended) != 1 or "after SIGINT" not in ended[0]:
            raise Failure("interrupted: exit %d, 'the job ended' lines %s" % (code, ended))
    print("ok: exit %d after %.1f s; %s" % (code, took, closing[0]))


def step_job(p, launcher, lang, mode):
    try:
        run_job(p, launcher, lang, mode)
    except Failure as e:
        # torchrun's agent can lose its own rendezvous store on a loaded machine (the agent, not
        # a worker, fails); that says nothing about ncclrec, so such a run is tried once more,
        # saying so (as tests/launchers does).
        log = os.path.join(p.work, "job-%s-%s-%s-venv" % (launcher, lang, mode), "ncclrec.log")
        if "RendezvousConnectionError" not in "\n".join(lines_of(log)):
            raise
        print("retry: torchrun's agent lost its rendezvous store (%s)" % e, flush=True)
        run_job(p, launcher, lang, mode)


def cxxrun_from_wheel(p):
    """cxxrun --nccl=host from the wheel: its hostnccl, its supervision, its verdict."""
    venv = p.venv
    dumps = os.path.join(p.work, "cxxrun-dumps")
    shutil.rmtree(dumps, ignore_errors=True)
    sample = os.path.join(ncclrec_path(venv, "sample-programs"), "sample_gated_save")
    env = dict(p.env(), LD_PRELOAD=ncclrec_path(venv, "shim"), NCCLREC_DIR=dumps)
    r = run([os.path.join(venv, "bin", "cxxrun"), "--standalone", "--nproc-per-node", str(RANKS),
             "--nccl=host", sample], check=False, env=env, timeout=TIMEOUT_S)
    hostnccl = ncclrec_path(venv, "hostnccl")
    if r.returncode != 3 or ("hostnccl from " + hostnccl) not in r.stderr:
        raise Failure("cxxrun --nccl=host from the wheel: exit %d:\n%s" % (r.returncode,
                                                                          r.stderr[-3000:]))
    reports = [os.path.join(d, "report.json") for d, _, files in os.walk(dumps)
               if "report.json" in files]
    if not reports:
        raise Failure("cxxrun from the wheel wrote no report.json under %s" % dumps)
    with open(reports[0]) as f:
        verdict = json.load(f)["verdict"]
    if verdict["class"] != "rank_gated_collective":
        raise Failure("cxxrun from the wheel: %s" % verdict["headline"])
    print("ok: cxxrun --nccl=host from the wheel: %s" % verdict["headline"])
