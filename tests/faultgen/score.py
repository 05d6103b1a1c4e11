#!/usr/bin/env python3
"""Scores ncclrec-analyze's verdicts on faultgen programs (tests/faultgen/run.sh).

  score.py line DIR SEED CXXRUN_EXIT ANALYZE_EXIT SECONDS OUT
                          writes DIR's result line (JSON) to OUT, prints its progress line
  score.py report COUNT < LINES                              the tables; exit 0 all passed, 1 not

A verdict passes when its class is the expected one (or one of EQUIVALENT's for that fault),
its culprit ranks (verdict.ranks) are exactly the injected rank, and its call site function is
one of the expected ones (docs/accuracy.md says which, per fault).
"""
import collections
import json
import os
import sys

# Fault kind -> classes accepted besides the expected one. Each entry needs a reason in
# docs/accuracy.md ("Equivalent classes"); none is needed yet.
EQUIVALENT = {}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def line(d, seed, cxxrun_exit, analyze_exit, seconds, out_path):
    prog = load(os.path.join(d, "program.json")) or {}
    doc = load(os.path.join(d, "verdict.json"))
    exp = prog.get("expected", {})
    fault = prog.get("fault", {})
    v = (doc or {}).get("verdict") or {}
    site = v.get("callsite") or {}
    got = {
        "class": v.get("class", "error: no verdict (analyzer exit %s)" % analyze_exit),
        "ranks": v.get("ranks"),
        "waiting": v.get("waiting"),
        "function": site.get("function"),
        "headline": v.get("headline"),
    }
    kind = fault.get("kind", "?")
    ok_class = got["class"] == exp.get("class") or got["class"] in EQUIVALENT.get(kind, [])
    ok_ranks = sorted(got["ranks"] or []) == sorted(exp.get("ranks", []))
    sites = exp.get("callsites", [])
    ok_site = not sites or got["function"] in sites
    out = {
        "seed": int(seed), "world": prog.get("world"), "fault": fault, "expected": exp,
        "got": got, "cxxrun_exit": int(cxxrun_exit), "analyze_exit": int(analyze_exit),
        "seconds": int(seconds), "forced": os.environ.get("FAULTGEN_FORCED", ""),
        "ok": {"class": ok_class, "ranks": ok_ranks, "callsite": ok_site},
    }
    out["pass"] = ok_class and ok_ranks and ok_site
    with open(out_path, "w") as f:
        f.write(json.dumps(out) + "\n")
    progress(out)


def fault_words(r):
    f = r["fault"]
    if f.get("kind") in (None, "none"):
        return "healthy"
    where = "init" if f.get("step", -1) < 0 else "step %s" % f.get("step")
    return "%s on rank %s at %s() %s (%s)" % (f["kind"], f.get("rank"), f.get("function"), where,
                                             f.get("detail", ""))


def got_words(r):
    g = r["got"]
    return "%s ranks %s at %s()" % (g["class"], g["ranks"], g["function"])


def progress(r):
    what = "PASS" if r["pass"] else "FAIL (%s)" % ", ".join(k for k, ok in r["ok"].items() if not ok)
    print("seed %d (%s ranks, %d s): %s -> %s: %s" % (r["seed"], r["world"], r["seconds"],
                                                       fault_words(r), got_words(r), what),
          flush=True)


def pct(n, d):
    return "%d/%d (%.1f%%)" % (n, d, 100.0 * n / d) if d else "0/0"


# Column headers of the confusion table (the rows keep the full class names).
SHORT = {
    "rank_gated_collective": "gated", "skipped_collective": "skip", "size_mismatch": "size",
    "dtype_mismatch": "dtype", "redop_mismatch": "redop", "root_mismatch": "root",
    "op_mismatch": "op", "rank_exited": "exit", "rank_crashed": "crash",
    "rank_stuck_in_host": "host", "rank_blocked_elsewhere": "elsewh", "cross_comm_deadlock": "cycle",
    "p2p_mismatch": "p2p", "nccl_error": "error", "no_hang": "none", "undecided": "undec",
    "slow_rank": "slow", "device_collision": "device",
}


def table(rows):
    expected = sorted({r["expected"].get("class", "?") for r in rows})
    got = sorted({r["got"]["class"] for r in rows})
    cells = collections.Counter((r["expected"].get("class", "?"), r["got"]["class"]) for r in rows)
    width = max(len(c) for c in expected + ["expected \\ got"])
    heads = [SHORT.get(g, g[:8]) for g in got]
    cols = [max(len(h), 3) for h in heads]
    print("expected \\ got".ljust(width) + "  " + "  ".join(h.rjust(w) for h, w in zip(heads, cols)))
    for e in expected:
        print(e.ljust(width) + "  " +
              "  ".join((str(cells[(e, g)]) if cells[(e, g)] else ".").rjust(w)
                        for g, w in zip(got, cols)))


def report(count):
    rows = [json.loads(l) for l in sys.stdin if l.strip()]
    print("\nconfusion (expected class x verdict class; columns: %s):" %
          ", ".join("%s=%s" % (v, k) for k, v in SHORT.items()
                    if any(r["got"]["class"] == k for r in rows)))
    if rows:
        table(rows)
    n = len(rows)
    faulty = [r for r in rows if r["fault"].get("kind") != "none"]
    healthy = [r for r in rows if r["fault"].get("kind") == "none"]
    sites = [r for r in faulty]
    print("\nprograms run:      %d of %d" % (n, count))
    print("culprit ranks:     %s" % pct(sum(r["ok"]["ranks"] for r in faulty), len(faulty)))
    print("class:             %s" % pct(sum(r["ok"]["class"] for r in rows), n))
    print("call site:         %s" % pct(sum(r["ok"]["callsite"] for r in sites), len(sites)))
    print("false alarms:      %s healthy programs" %
          pct(sum(r["got"]["class"] != "no_hang" for r in healthy), len(healthy)))
    print("all three right:   %s" % pct(sum(r["pass"] for r in rows), n))
    secs = sum(r["seconds"] for r in rows)
    print("time per program:  %.1f s (run + analysis, wall, one job)" % (secs / n if n else 0))
    by_kind = collections.defaultdict(list)
    for r in rows:
        by_kind[r["fault"].get("kind", "?")].append(r)
    print("\nper fault kind (passed/run):")
    for k in sorted(by_kind):
        print("  %-14s %s" % (k, pct(sum(r["pass"] for r in by_kind[k]), len(by_kind[k]))))
    failed = sorted((r for r in rows if not r["pass"]), key=lambda r: r["seed"])
    if failed:
        print("\nfailures (%d):" % len(failed))
    for r in failed:
        bad = ", ".join(k for k, ok in r["ok"].items() if not ok)
        print("  seed %d: %s\n    expected %s ranks %s at %s; got %s [%s]\n    headline: %s" %
              (r["seed"], fault_words(r), r["expected"].get("class"), r["expected"].get("ranks"),
               "/".join(r["expected"].get("callsites", [])) or "-", got_words(r), bad,
               r["got"]["headline"]))
        fault = " --fault %s" % r["forced"] if r.get("forced") else ""
        print("    replay: tests/faultgen/run.sh --seed %d --count 1 --keep /tmp/faultgen%s"
              "   (program: build/bin/ncclrec_faultgen --seed %d%s --describe)" %
              (r["seed"], fault, r["seed"], fault))
    if failed:
        print("\nfailures by pattern (fault -> verdict class [wrong parts]: seeds):")
        patterns = collections.defaultdict(list)
        for r in failed:
            bad = ",".join(k for k, ok in r["ok"].items() if not ok)
            patterns[(r["fault"].get("kind"), r["got"]["class"], bad)].append(str(r["seed"]))
        for (kind, got, bad), seeds in sorted(patterns.items(), key=lambda kv: -len(kv[1])):
            print("  %-13s -> %s [%s]: %s" % (kind, got, bad, " ".join(seeds)))
    if n < count:
        print("\n%d program(s) left no result" % (count - n))
    return 0 if n == count and not failed else 1


def main(argv):
    if len(argv) == 8 and argv[1] == "line":
        line(*argv[2:])
        return 0
    if len(argv) == 3 and argv[1] == "report":
        return report(int(argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
