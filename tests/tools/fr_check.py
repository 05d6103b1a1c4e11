#!/usr/bin/python3
"""Generates one Flight Recorder scenario (gen_fr_dumps.py), runs ncclrec-analyze --json on the
directory and checks the verdict: class, culprit ranks, call site, exit code, missing ranks.

    fr_check.py ANALYZE SCENARIO --class C [--ranks 0,1] [--site train.py:77] [--exit N]
                [--missing TEXT] [--json] [--protocol P]
    fr_check.py ANALYZE SCENARIO --events REGEX  (--events lists the ops: REGEX must match)
    fr_check.py ANALYZE SCENARIO --trace         (--trace FILE writes a Chrome trace of the ranks)
    fr_check.py ANALYZE SCENARIO --error REGEX   (exit 1, one stderr line matching REGEX, and
                                                  no file `pwned` created by the dump)"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("analyze")
    p.add_argument("scenario")
    p.add_argument("--class", dest="cls")
    p.add_argument("--error")
    p.add_argument("--events")
    p.add_argument("--trace", action="store_true")
    p.add_argument("--ranks")
    p.add_argument("--site")
    p.add_argument("--exit", type=int)
    p.add_argument("--missing")
    p.add_argument("--json", action="store_true")
    p.add_argument("--protocol", default="2")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        gen = [sys.executable, os.path.join(HERE, "gen_fr_dumps.py"), a.scenario, work,
               "--protocol", a.protocol] + (["--json"] if a.json else [])
        subprocess.run(gen, check=True)
        if a.events is not None:
            run = subprocess.run([a.analyze, "--events", work], capture_output=True, text=True)
            ok = run.returncode == 0 and re.search(a.events, run.stdout) is not None
            print(run.stdout[-2000:] + run.stderr)
            sys.exit(0 if ok else f"FAIL: exit {run.returncode} or no line matching {a.events}")
        trace = os.path.join(work, "trace.json")
        flags = ["--trace", trace] if a.trace else []
        run = subprocess.run([a.analyze, "--json"] + flags + [work], capture_output=True, text=True)
        pwned = os.path.exists(os.path.join(work, "pwned"))
        if a.trace:
            with open(trace) as f:
                events = json.load(f)["traceEvents"]
            ranks = {e.get("pid") for e in events if e.get("ph") == "X"}
            print(f"trace: {len(events)} events, ranks {sorted(ranks)}")
            if len(ranks) < 2:
                sys.exit("FAIL: the trace shows fewer than two ranks' ops")
    if a.error is not None:
        print(run.stderr.strip())
        ok = (run.returncode == 1 and not pwned and len(run.stderr.splitlines()) == 1 and
              re.search(a.error, run.stderr) is not None)
        sys.exit(0 if ok else f"FAIL: exit {run.returncode}, pwned={pwned}, expected one line "
                              f"matching {a.error}")
    fails = []
    try:
        doc = json.loads(run.stdout)
    except json.JSONDecodeError:
        sys.exit(f"FAIL: no JSON verdict (exit {run.returncode}): {run.stderr.strip()}")
    v = doc["verdict"]
    print(f"{v['class']}: {v['headline']}")
    if v["class"] != a.cls:
        fails.append(f"class {v['class']}, expected {a.cls}")
    if a.ranks is not None:
        want = [int(x) for x in a.ranks.split(",") if x]
        if v["ranks"] != want:
            fails.append(f"ranks {v['ranks']}, expected {want}")
    if a.site is not None:
        site = v["callsite"] or {}
        got = f"{os.path.basename(site.get('file') or '')}:{site.get('line')}"
        if got != a.site:
            fails.append(f"call site {got}, expected {a.site}")
    if a.exit is not None and run.returncode != a.exit:
        fails.append(f"exit code {run.returncode}, expected {a.exit}")
    if a.missing is not None and not any(a.missing in m for m in doc["missing"]):
        fails.append(f"missing {doc['missing']}, expected one saying '{a.missing}'")
    if doc["warnings"]:
        fails.append(f"warnings {doc['warnings']}")
    for f in fails:
        print("FAIL:", f, file=sys.stderr)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
