#!/usr/bin/env python3
"""The include check of docs/architecture.md: every #include "..." of the tree points to its own
floor or below, no folder reaches another that reaches back, nothing includes tui/, and hostnccl/
includes nothing of ours but the NCCL API headers.

    scripts/check_layers.py [--root DIR] [--list]

Reads the include lines of every C/C++ file git tracks (or every file under --root when it is not
a git checkout). Prints one line per forbidden include, FILE:LINE: INCLUDE: why, and exits 1;
exits 0, printing the folder graph's summary, when there is none; 2 on bad usage. --list prints
each folder's floor and the folders it includes, and exits 0.
"""

import argparse
import os
import re
import subprocess
import sys

# The floors, lowest first. A library folder may include its own floor and the floors below.
FLOORS = {
    "third_party": 0,
    "base": 0,
    "format": 1,
    "recorder": 2,
    "analyzer": 2,
    "live": 2,
    "report": 3,
    "metrics": 3,
    "interpose": 4,
    "launcher": 4,
    "watch": 4,
    "tui": 4,
    # Programs and tests on top of everything: they may include any library folder.
    "trainer": 5,
    "samples": 5,
    "tests": 5,
    "python": 5,
}
TOP = 5

# Folders that must stay self-contained: what each may include besides itself.
ONLY = {
    "third_party": set(),
    "hostnccl": {"third_party"},  # the NCCL API on CPU: it serves any program, ours or not
}

# Test-only helpers any test file may include (a test file: *_test.cc, or under a testing/ folder).
TEST_HELPERS = ("tests/support/", "format/testing/", "live/testing/")

# Nothing outside tui/ includes tui/ (ncclrec-top is the top of its stack); nothing of the
# libraries includes the trainer or the samples (except the samples' own tests, on top).
NOBODY_INCLUDES = {"tui": "tui/ is ncclrec-top's own; share through live/ instead"}

SOURCE = re.compile(r"\.(cc|cpp|c|h|hpp)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def tracked_files(root):
    try:
        top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"], check=True,
                             capture_output=True, text=True).stdout.strip()
        if os.path.realpath(top) == os.path.realpath(root):
            out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                                 capture_output=True).stdout.decode()
            return [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        pass
    # Not a git checkout of its own (a tarball, a test's tree): every file under root.
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and not d.startswith("build")]
        for name in filenames:
            files.append(os.path.relpath(os.path.join(dirpath, name), root))
    return files


def is_test_file(path):
    base = os.path.basename(path)
    return re.search(r"_test\.(cc|cpp|c)$", base) is not None or "/testing/" in path


def folder_of(path):
    return path.split("/", 1)[0] if "/" in path else ""


def check(root):
    problems = []
    edges = {}  # folder -> {included folder: first "file:line"}
    for path in sorted(tracked_files(root)):
        if not SOURCE.search(path):
            continue
        src = folder_of(path)
        if src not in FLOORS and src not in ONLY:
            continue  # e.g. fuzz/, cmake/: no library of ours
        try:
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                lines = f.readlines()
        except OSError as e:
            problems.append(f"{path}: cannot read: {e.strerror}")
            continue
        for number, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            dst = folder_of(inc)
            where = f"{path}:{number}: \"{inc}\""
            if dst == "" or (dst not in FLOORS and dst not in ONLY):
                # Generated or local headers ("ncclrec.pb.h" is included rooted, like the rest).
                if not os.path.exists(os.path.join(root, inc)):
                    continue
                dst = folder_of(inc)
            if dst == src:
                continue
            if is_test_file(path) and inc.startswith(TEST_HELPERS):
                continue
            why = None
            if src in ONLY:
                if dst not in ONLY[src]:
                    allowed = ", ".join(sorted(ONLY[src])) or "nothing"
                    why = f"{src}/ may include only {allowed} besides itself"
            elif dst in NOBODY_INCLUDES:
                why = NOBODY_INCLUDES[dst]
            elif dst in ONLY and dst != "third_party":
                why = f"{dst}/ is a program of its own (link it, do not include it)"
            elif dst not in FLOORS:
                why = f"{dst}/ is not a library folder"
            elif FLOORS[dst] > FLOORS[src]:
                why = (f"{src}/ is on floor {FLOORS[src]}, {dst}/ on floor {FLOORS[dst]}: "
                       "an include may only point to its own floor or below")
            elif FLOORS[src] == TOP and FLOORS[dst] == TOP and not is_test_file(path) \
                    and dst in ("trainer", "samples") and src not in ("tests",):
                why = f"{dst}/ is a program: nothing but the tests includes it"
            if why:
                problems.append(f"{where}: {why}")
            else:
                edges.setdefault(src, {}).setdefault(dst, f"{path}:{number}")
    problems.extend(cycles(edges))
    return problems, edges


def cycles(edges):
    """A folder that reaches itself through other folders of its floor (floors alone cannot
    forbid a circle inside one floor)."""
    found = []
    state = {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, {})):
            if state.get(nxt) == 1:
                circle = stack[stack.index(nxt):] + [nxt]
                hops = ", ".join(f"{a}->{b} at {edges[a][b]}" for a, b in zip(circle, circle[1:]))
                found.append(f"folders include each other: {' -> '.join(circle)} ({hops})")
            elif state.get(nxt) is None:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if state.get(node) is None:
            visit(node, [])
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."),
                        help="the repository (default: this script's)")
    parser.add_argument("--list", action="store_true", help="print the floors and the folder graph")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if not os.path.isdir(root):
        print(f"check_layers: --root {args.root}: not a directory", file=sys.stderr)
        return 2
    problems, edges = check(root)
    if args.list:
        for folder in sorted(set(FLOORS) | set(ONLY), key=lambda f: (FLOORS.get(f, -1), f)):
            floor = FLOORS.get(folder)
            label = f"floor {floor}" if floor is not None else "apart"
            print(f"{folder:12} {label:8} -> {', '.join(sorted(edges.get(folder, {}))) or '-'}")
        return 0
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} forbidden include(s); the floors are in "
              "docs/architecture.md", file=sys.stderr)
        return 1
    n = sum(len(v) for v in edges.values())
    print(f"check_layers: ok ({len(edges)} folders, {n} folder-to-folder dependencies, no include "
          "above its floor, no circle)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
