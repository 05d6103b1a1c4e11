"""A sample under a real launcher -- torchrun, OpenMPI's mpirun or Slurm's srun -- with
libncclrec.so preloaded and hostnccl as NCCL, recorded, dumped and analyzed:

  faulty   the job hangs; every rank's watchdog (or the trigger file) dumps within seconds; the
           test stops the job as a user would (Ctrl-C: SIGTERM to the launcher) and
           ncclrec-analyze --json on the dump directory must give the sample's expected.json
           (class, culprit ranks, call-site function, and file/line where given).
  healthy  the job ends with exit 0, the analyzer finds no_hang, and the live detection said
           nothing (no "ncclrec: stalled", no "ncclrec: hang" line).
  live     the faulty sample with default settings (no NCCLREC_TIMEOUT): a stalled rank starts
           ncclrec-watch, which must print the hang line and the verdict with report.json's path
           on the launcher's stderr; the test stops the job, checks report.json's verdict
           against expected.json and prints its timeline (seconds from the stall to the hang
           line and to the verdict).

Usage:
  launcher_test.py --launcher torchrun|mpirun|srun --lang cxx|python --mode faulty|healthy|live
                   --build DIR --source DIR [--sample NAME] [--ranks N] [--keep DIR]

Exit codes: 0 passed, 1 failed (the reason on stderr), 2 bad usage, 77 skipped (the launcher
is not installed, or Slurm's daemons cannot start here; the reason is printed).
"""
import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from slurm_cluster import SlurmCluster, SlurmUnavailable

SKIP = 77
PYTHON = "/usr/bin/python3"  # Debian's, the one python3-torch is built for


class Failure(Exception):
    pass


def skip(reason):
    print("SKIP: " + reason)
    sys.exit(SKIP)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--launcher", required=True, choices=["torchrun", "mpirun", "srun"])
    p.add_argument("--lang", required=True, choices=["cxx", "python"])
    p.add_argument("--mode", required=True, choices=["faulty", "healthy", "live"])
    p.add_argument("--build", required=True, help="the build directory (bin/, lib/, hostnccl/)")
    p.add_argument("--source", required=True, help="the source tree (samples/, tests/launchers/)")
    p.add_argument("--sample", default="gated_save")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--timeout", type=float, default=90, help="seconds for the job")
    p.add_argument("--keep", help="keep the dumps and logs in this directory")
    return p.parse_args()


def program(a):
    """The sample's command line and its expected.json."""
    if a.lang == "cxx":
        exe = os.path.join(a.build, "bin", "sample_" + a.sample)
        expected = os.path.join(a.source, "samples", a.sample, "expected.json")
        return [exe, sample_mode(a)], expected
    script = os.path.join(a.source, "samples", "python", a.sample, a.sample + ".py")
    expected = os.path.join(a.source, "samples", "python", a.sample, "expected.json")
    return [PYTHON, script, sample_mode(a)], expected


def sample_mode(a):
    return "faulty" if a.mode == "live" else a.mode


def check_launcher(launcher):
    if launcher == "torchrun":
        r = subprocess.run([PYTHON, "-c", "import torch.distributed.run"], capture_output=True)
        if r.returncode != 0:
            skip("torchrun: %s cannot import torch.distributed.run (Debian: apt-get install "
                 "python3-torch)" % PYTHON)
    elif launcher == "mpirun" and shutil.which("mpirun") is None:
        skip("mpirun: not installed (Debian: apt-get install openmpi-bin)")


# The variables the test gives the ranks (NCCLREC_TIMEOUT only in the faulty mode).
PASSED = ("LD_PRELOAD", "LD_LIBRARY_PATH", "NCCLREC_DIR", "NCCLREC_TIMEOUT")


def launch_command(a, prog, env, slurm):
    """The launcher's command line, as docs/launchers.md writes it."""
    n = str(a.ranks)
    if a.launcher == "torchrun":
        wrapper = os.path.join(a.source, "tests", "launchers", "torchrun.py")
        head = [PYTHON, wrapper, "--standalone", "--nproc_per_node", n]
        # torchrun runs a Python script with its own interpreter; anything else with --no_python.
        return head + (prog[1:] if a.lang == "python" else ["--no_python"] + prog)
    if a.launcher == "mpirun":
        cmd = ["mpirun", "--oversubscribe", "-np", n]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        for k in PASSED:
            if k in env:
                cmd += ["-x", "%s=%s" % (k, env[k])]
        return cmd + prog
    exports = ",".join("%s=%s" % (k, env[k]) for k in PASSED if k in env)
    return slurm.srun_command(a.ranks) + ["--export=ALL," + exports] + prog


def ranks_dumped(dump_dir):
    """The processes that wrote at least one dump (HOST.PID[-K].N.REASON.ncclrec.pb)."""
    pids = set()
    for path in glob.glob(os.path.join(dump_dir, "*.ncclrec.pb")):
        parts = os.path.basename(path).split(".")
        if len(parts) >= 5:
            pids.add(parts[-5])
    return pids


def stop(proc, slurm):
    """Ctrl-C as a user would: SIGTERM to the launcher's process group, then SIGKILL."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    if slurm is not None:
        slurm.cancel_all()


def analyze(a, dump_dir):
    r = subprocess.run([os.path.join(a.build, "bin", "ncclrec-analyze"), "--json", dump_dir],
                       capture_output=True, text=True)
    try:
        return json.loads(r.stdout)["verdict"]
    except (ValueError, KeyError):
        raise Failure("ncclrec-analyze exit %d, no verdict: %s" % (r.returncode, r.stderr.strip()))


def check_verdict(verdict, expected_path):
    with open(expected_path) as f:
        expected = json.load(f)
    site = verdict.get("callsite") or {}
    got = {"class": verdict.get("class"), "ranks": verdict.get("ranks"),
           "function": site.get("function"), "file": os.path.basename(site.get("file") or ""),
           "line": site.get("line"), "waiting": verdict.get("waiting")}
    wrong = [k for k in ("class", "ranks", "function", "file", "line", "waiting")
             if k in expected and expected[k] != got[k]]
    if wrong:
        raise Failure("verdict differs from %s in %s: got %s; headline: %s"
                      % (expected_path, ", ".join(wrong), json.dumps(got),
                         verdict.get("headline")))


def run(a, work, slurm):
    dump_dir = os.path.join(work, "dumps")
    os.makedirs(dump_dir)
    prog, expected = program(a)
    env = dict(os.environ)
    for k in [k for k in env if k.startswith("NCCLREC_")]:
        del env[k]  # default settings but for what the mode sets
    env.update({"LD_PRELOAD": os.path.join(a.build, "lib", "libncclrec.so"),
                "LD_LIBRARY_PATH": os.path.join(a.build, "hostnccl"),
                "NCCLREC_DIR": dump_dir})
    if a.mode == "faulty":
        env["NCCLREC_TIMEOUT"] = "2"  # every rank's own watchdog dumps within seconds
    cmd = launch_command(a, prog, env, slurm)
    # The launcher itself runs without the shim; torchrun passes its environment on to workers.
    launcher_env = dict(env)
    if a.launcher != "torchrun":
        for k in ("LD_PRELOAD", "LD_LIBRARY_PATH"):
            launcher_env.pop(k)
    if slurm is not None:
        launcher_env["SLURM_CONF"] = slurm.conf
    print("$ " + " ".join(cmd), flush=True)
    log = open(os.path.join(work, "launcher.log"), "w")
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=launcher_env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        if a.mode == "healthy":
            try:
                code = proc.wait(timeout=a.timeout)
            except subprocess.TimeoutExpired:
                raise Failure("the healthy job did not end in %.0f s" % a.timeout)
            if code != 0:
                raise Failure("the healthy job exited %d" % code)
            verdict = analyze(a, dump_dir)
            if verdict.get("class") != "no_hang":
                raise Failure("healthy job: %s" % verdict.get("headline"))
            log.flush()
            said = live_lines(os.path.join(work, "launcher.log"))
            if said:
                raise Failure("healthy job, yet the live detection said: %s" % said[0])
            print("ok: exit 0 after %.1f s, verdict no_hang" % (time.monotonic() - start))
            return
        if a.mode == "live":
            return run_live(a, work, proc, start, expected)
        while len(ranks_dumped(dump_dir)) < a.ranks:
            if proc.poll() is not None:
                raise Failure("the job ended (exit %d) before every rank dumped (%d of %d)"
                              % (proc.returncode, len(ranks_dumped(dump_dir)), a.ranks))
            if time.monotonic() - start > a.timeout:
                raise Failure("%d of %d ranks dumped in %.0f s"
                              % (len(ranks_dumped(dump_dir)), a.ranks, a.timeout))
            time.sleep(0.2)
        dumped = time.monotonic() - start
    finally:
        if proc.poll() is None:
            stop(proc, slurm)
        log.close()
    verdict = analyze(a, dump_dir)
    check_verdict(verdict, expected)
    print("ok: every rank dumped %.1f s after the start; %s" % (dumped, verdict["headline"]))


def live_lines(log_path):
    """The live detection's warning and hang lines in the launcher's output."""
    with open(log_path, errors="replace") as f:
        return [l.strip() for l in f if l.startswith(("ncclrec: stalled", "ncclrec: hang ("))]


def run_live(a, work, proc, start, expected):
    """Waits for the watcher's report line; returns once the verdict is checked."""
    log_path = os.path.join(work, "launcher.log")
    report = None
    while report is None:
        with open(log_path, errors="replace") as f:
            for line in f:
                if "; report: " in line:
                    report = line.rsplit("; report: ", 1)[1].strip()
        if report is None:
            if proc.poll() is not None:
                raise Failure("the job ended (exit %d) with no live verdict" % proc.returncode)
            if time.monotonic() - start > a.timeout:
                raise Failure("no live verdict in %.0f s" % a.timeout)
            time.sleep(0.05)
    reported = time.monotonic() - start
    hangs = [l for l in live_lines(log_path) if l.startswith("ncclrec: hang (")]
    if len(hangs) != 1:
        raise Failure("%d hang lines, not one: %s" % (len(hangs), hangs))
    with open(report) as f:
        doc = json.load(f)
    verdict = doc.get("verdict") or {}
    check_verdict(verdict, expected)
    # report.json's timeline: seconds from the stall's start (the last call or completion of any
    # rank) to the detection and to the verdict.
    timeline = doc.get("timeline") or {}
    if "verdict_after_s" not in timeline:
        raise Failure("report.json has no timeline: %s" % json.dumps(doc.get("timeline")))
    print("ok: live verdict %.1f s after the start; stall -> hang line %.2f s, -> verdict %.2f s;"
          " %s; %s" % (reported, timeline["detected_after_s"], timeline["verdict_after_s"],
                      hangs[0], verdict.get("headline")))


def launcher_failed_on_its_own(work):
    try:
        with open(os.path.join(work, "launcher.log")) as f:
            return "RendezvousConnectionError" in f.read()
    except OSError:
        return False


def main():
    a = parse_args()
    a.build, a.source = os.path.abspath(a.build), os.path.abspath(a.source)
    check_launcher(a.launcher)
    work = tempfile.mkdtemp(prefix="ncclrec-launcher-")
    slurm = None
    try:
        if a.launcher == "srun":
            try:
                slurm = SlurmCluster(os.path.join(work, "slurm"), cpus=a.ranks)
            except SlurmUnavailable as e:
                skip("srun: %s" % e)
        try:
            run(a, work, slurm)
        except Failure as e:
            # torchrun's agent can lose its own rendezvous store on a loaded machine (the agent,
            # not a worker, fails: RendezvousConnectionError); that says nothing about ncclrec,
            # so such a run is tried once more, saying so.
            if not launcher_failed_on_its_own(work):
                raise
            print("retry: torchrun's agent lost its rendezvous store (%s)" % e, flush=True)
            shutil.rmtree(work, ignore_errors=True)
            os.makedirs(work)
            run(a, work, slurm)
    except Failure as e:
        log = os.path.join(work, "launcher.log")
        if os.path.exists(log):
            with open(log) as f:
                sys.stderr.write("--- the launcher's output (last 40 lines)\n")
                sys.stderr.writelines(f.readlines()[-40:])
        print("FAIL: %s %s %s %s: %s" % (a.launcher, a.lang, a.sample, a.mode, e),
              file=sys.stderr)
        return 1
    finally:
        if slurm is not None:
            slurm.shutdown()
        if a.keep:
            shutil.copytree(work, a.keep, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
