"""Hang -> verdict latency of live detection, false alarms, and its cost (docs/performance.md,
"Live hang detection").

Every C++ sample's faulty mode runs --runs times under cxxrun with 4 ranks, libncclrec.so and
hostnccl, with DEFAULT detection settings (no NCCLREC_TIMEOUT). From each report.json's timeline:
seconds from the stall's start to its detection and to the printed verdict, and the stall's kind
("certain", "slow", "host", "unknown"). Then every sample's healthy mode and a healthy trainer run
count false alarms (a hang report, or a "stalled" warning), and the trainer run is repeated with
live detection off (NCCLREC_WATCHER=off) to measure what it costs cxxrun in CPU.

Usage: detect_latency.py [--build DIR] [--runs N] [--samples a,b] [--trainer-steps N] [--json]
Exit status: 0 measured (figures on stdout); 1 a run did not end as expected (named on stderr);
2 bad usage. Timings are reported, never judged.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KIND = re.compile(r"hang \(([a-z]+), no progress for")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    p.add_argument("--runs", type=int, default=5, help="runs per faulty sample (default 5)")
    p.add_argument("--samples", default="", help="comma list (default: every sample_* binary)")
    p.add_argument("--trainer-steps", type=int, default=1000)
    p.add_argument("--json", action="store_true", help="one JSON document instead of tables")
    a = p.parse_args()
    if a.runs < 1 or a.trainer_steps < 1:
        p.error("--runs and --trainer-steps must be at least 1")
    a.build = os.path.abspath(a.build)
    for need in ("bin/cxxrun", "lib/libncclrec.so"):
        if not os.path.exists(os.path.join(a.build, need)):
            p.error("no %s in %s: build the project first" % (need, a.build))
    return a


def env_for(dump_dir, watcher=None):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("NCCLREC_") or k in ("CXXRUN_STORE", "CXXRUN_TOKEN"):
            del env[k]
    env["NCCLREC_DIR"] = dump_dir
    if watcher:
        env["NCCLREC_WATCHER"] = watcher
    return env


def cxxrun(a, argv, dump_dir, watcher=None, timeout=200):
    """Runs cxxrun; returns (exit code, stderr, wall s, cxxrun's own CPU s)."""
    shim = os.path.join(a.build, "lib", "libncclrec.so")
    env = env_for(dump_dir, watcher)
    env["LD_PRELOAD"] = shim
    cmd = [os.path.join(a.build, "bin", "cxxrun"), "--standalone", "--nproc-per-node", "4",
           "--nccl=host"] + argv
    start = time.monotonic()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        cpu = 0.0
        tick = os.sysconf("SC_CLK_TCK")
        while proc.poll() is None:
            try:
                with open("/proc/%d/stat" % proc.pid) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                cpu = (int(fields[11]) + int(fields[12])) / tick  # utime, stime: cxxrun only
            except (OSError, IndexError, ValueError):
                pass
            if time.monotonic() - start > timeout:
                proc.kill()
            time.sleep(0.05)
        wall = time.monotonic() - start
        err.seek(0)
        text = err.read().decode(errors="replace")
    return proc.returncode, text, wall, cpu


def samples(a):
    names = sorted(n[len("sample_"):] for n in os.listdir(os.path.join(a.build, "bin"))
                   if n.startswith("sample_"))
    if a.samples:
        wanted = a.samples.split(",")
        missing = [w for w in wanted if w not in names]
        if missing:
            sys.exit("detect_latency.py: no sample_%s in %s/bin" % (missing[0], a.build))
        names = wanted
    return names


def faulty_runs(a, name, tmp):
    out = []
    for i in range(a.runs):
        d = os.path.join(tmp, "%s.%d" % (name, i))
        rc, err, wall, _ = cxxrun(a, [os.path.join(a.build, "bin", "sample_" + name), "faulty"], d)
        if rc != 3:
            out.append({"exit": rc})  # a failure, not a hang: no detection to time
            continue
        reports = [os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs if f == "report.json"]
        if not reports:
            raise RuntimeError("%s run %d: exit 3 but no report.json\n%s" % (name, i, err))
        with open(reports[0]) as f:
            doc = json.load(f)
        t = doc.get("timeline")
        if not t:
            raise RuntimeError("%s run %d: report.json has no timeline (a rank's timeout "
                               "decided?)" % (name, i))
        m = KIND.search(t.get("detection", ""))
        out.append({"exit": 3, "kind": m.group(1) if m else "?",
                    "detected_s": t["detected_after_s"], "verdict_s": t["verdict_after_s"],
                    "class": (doc.get("verdict") or {}).get("class")})
    return out


def false_alarms(text):
    return ("cxxrun: hang" in text) + ("cxxrun: stalled" in text)


def main():
    a = parse_args()
    result = {"samples": {}, "healthy": {}, "trainer": {}}
    failed = []
    with tempfile.TemporaryDirectory(prefix="ncclrec-detect-") as tmp:
        for name in samples(a):
            try:
                runs = faulty_runs(a, name, tmp)
            except RuntimeError as e:
                failed.append(str(e))
                continue
            result["samples"][name] = runs
            rc, err, _, _ = cxxrun(a, [os.path.join(a.build, "bin", "sample_" + name), "healthy"],
                                   os.path.join(tmp, name + ".healthy"))
            result["healthy"][name] = {"exit": rc, "false_alarms": false_alarms(err)}
            print("detect_latency.py: %s done" % name, file=sys.stderr)
        trainer = os.path.join(a.build, "bin", "ncclrec-trainer")
        if os.path.exists(trainer):
            for watcher in (None, "off"):
                rc, err, wall, cpu = cxxrun(a, [trainer, "--steps", str(a.trainer_steps),
                                                "--log-every", "1000"],
                                            os.path.join(tmp, "trainer.%s" % watcher), watcher)
                result["trainer"]["on" if watcher is None else "off"] = {
                    "exit": rc, "wall_s": wall, "cxxrun_cpu_s": cpu,
                    "false_alarms": false_alarms(err)}
    if a.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        report(result)
    for f in failed:
        print("detect_latency.py: " + f, file=sys.stderr)
    return 1 if failed else 0


def report(result):
    print("%-26s %-8s %5s %14s %14s" % ("sample", "kind", "runs", "detect med/max",
                                         "verdict med/max"))
    print("(seconds after the stall began; a sample that fails instead of hanging shows cxxrun's "
          "exit code)")
    by_kind = {}
    for name, runs in sorted(result["samples"].items()):
        hung = [r for r in runs if r["exit"] == 3]
        if not hung:
            codes = ",".join(sorted({str(r["exit"]) for r in runs}))
            print("%-26s %-8s %5d %14s %14s" % (name, "exit " + codes, len(runs), "-", "-"))
            continue
        kind = "/".join(sorted({r["kind"] for r in hung}))
        d = [r["detected_s"] for r in hung]
        v = [r["verdict_s"] for r in hung]
        by_kind.setdefault(kind, []).extend(v)
        print("%-26s %-8s %5d %6.1f / %5.1f %6.1f / %5.1f" % (
            name, kind, len(hung), statistics.median(d), max(d), statistics.median(v), max(v)))
    print()
    for kind, v in sorted(by_kind.items()):
        print("kind %-8s verdict after the stall began: median %.1f s, max %.1f s (%d runs)" % (
            kind, statistics.median(v), max(v), len(v)))
    alarms = sum(h["false_alarms"] for h in result["healthy"].values())
    bad = [n for n, h in result["healthy"].items() if h["exit"] != 0]
    print("healthy sample runs: %d, false alarms: %d, not exit 0: %s" % (
        len(result["healthy"]), alarms, ",".join(bad) or "none"))
    t = result["trainer"]
    if "on" in t and "off" in t:
        extra = t["on"]["cxxrun_cpu_s"] - t["off"]["cxxrun_cpu_s"]
        print("trainer: exit %d, false alarms %d; cxxrun CPU %.2f s with live detection, %.2f s "
              "without, over %.1f s: %.2f %% of a core per rank" % (
                  t["on"]["exit"], t["on"]["false_alarms"], t["on"]["cxxrun_cpu_s"],
                  t["off"]["cxxrun_cpu_s"], t["on"]["wall_s"],
                  100.0 * max(extra, 0) / t["on"]["wall_s"] / 4))


if __name__ == "__main__":
    sys.exit(main())
