#!/usr/bin/env python3
"""The size limits of docs/architecture.md: no source file over 500 lines outside the tests, and
no function of analyzer/ over 80 lines (its rules are read one at a time; a longer one hides
several decisions that each deserve a name).

    scripts/check_sizes.py [--root DIR] [--top N]

Prints one line per file or function over its limit (FILE:LINE: NAME: N lines, limit L) and exits
1; exits 0 with a summary otherwise; 2 on bad usage. --top N also prints the N longest analyzer
functions, to see what comes next.

Functions are found as clang-format lays them out: a definition's signature starts in column 0
(or at the indentation of its class) and its body ends at the first "}" at that indentation.
Lambdas and local classes count towards the function that holds them.
"""

import argparse
import os
import re
import subprocess
import sys

FILE_LIMIT = 500
FUNCTION_LIMIT = 80
SOURCES = re.compile(r"\.(cc|h|cpp|hpp|py|sh|cmake|proto)$|(^|/)CMakeLists\.txt$")
FUNCTION_DIRS = ("analyzer/",)


def is_test(path):
    return (path.startswith("tests/") or re.search(r"_test\.(cc|py|sh)$", path) is not None
            or "/testing/" in path or "/tests/" in path)


def tracked(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout.decode()
        return [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "build"))]
            found += [os.path.relpath(os.path.join(dirpath, n), root) for n in filenames]
        return found


# A line that opens a function definition's body: "...name(...) ... {" not a control statement,
# not a namespace, class, struct, enum or initializer.
OPENER = re.compile(r"^(\s*)(?!(?:if|for|while|switch|else|do|namespace|class|struct|enum|union|"
                    r"return|case|default|try|catch|extern)\b)[^;{}]*?([~\w:<>]+)\s*\([^;]*\)"
                    r"[^;{}]*\{\s*(//.*)?$")


def functions(lines):
    """(name, first line, length) of each function definition: the signature's first line to
    the closing brace, both included."""
    out = []
    i = 0
    while i < len(lines):
        # The signature may span lines: join up to 6 lines ending at one that opens a body.
        m = None
        for span in range(0, 6):
            if i - span < 0:
                break
            first = lines[i - span]
            if span and (first.strip() == "" or first.rstrip().endswith((";", "}", "{"))
                         or first.lstrip().startswith(("//", "#"))):
                break
            text = " ".join(l.strip() for l in lines[i - span:i + 1])
            indent = re.match(r"^(\s*)", first).group(1)
            cand = OPENER.match(indent + text)
            if cand and lines[i].rstrip().endswith("{") and not text.startswith(("}", ":")):
                m = (cand, i - span, indent)
        if m is None:
            i += 1
            continue
        cand, start, indent = m
        name = cand.group(2)
        if name in ("if", "for", "while", "switch", "catch") or "=" in name:
            i += 1
            continue
        end = i + 1
        closer = re.compile(r"^" + re.escape(indent) + r"\}")
        while end < len(lines) and not closer.match(lines[end]):
            end += 1
        if end >= len(lines):
            i += 1
            continue
        out.append((name, start + 1, end - start + 1))
        i = end + 1
    return out


def check(root, top):
    problems, longest = [], []
    files = [f for f in tracked(root) if SOURCES.search(f)]
    for path in sorted(files):
        try:
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                lines = f.read().split("\n")
        except OSError as e:
            problems.append(f"{path}: cannot read: {e.strerror}")
            continue
        if lines and lines[-1] == "":
            lines.pop()
        if not is_test(path) and len(lines) > FILE_LIMIT:
            problems.append(f"{path}:1: file: {len(lines)} lines, limit {FILE_LIMIT}")
        if path.startswith(FUNCTION_DIRS) and path.endswith((".cc", ".h")) and not is_test(path):
            for name, line, length in functions(lines):
                longest.append((length, f"{path}:{line}: {name}"))
                if length > FUNCTION_LIMIT:
                    problems.append(f"{path}:{line}: {name}: {length} lines, limit "
                                    f"{FUNCTION_LIMIT}")
    longest.sort(reverse=True)
    return problems, longest[:top], len(files)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--top", type=int, default=0, help="print the N longest analyzer functions")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if not os.path.isdir(root):
        print(f"check_sizes: --root {args.root}: not a directory", file=sys.stderr)
        return 2
    if args.top < 0:
        print(f"check_sizes: --top {args.top}: must be 0 or more", file=sys.stderr)
        return 2
    problems, longest, n = check(root, args.top)
    for length, where in longest:
        print(f"{length:5}  {where}")
    for p in problems:
        print(p)
    if problems:
        print(f"check_sizes: {len(problems)} over the limits (docs/architecture.md)",
              file=sys.stderr)
        return 1
    print(f"check_sizes: ok ({n} files; none over {FILE_LIMIT} lines outside the tests, no "
          f"analyzer function over {FUNCTION_LIMIT})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
