#!/usr/bin/env python3
"""scripts/check_sizes.py on small trees: each limit, broken once, fails the check with a line
that names the file (and function); a tree within the limits passes; tests are exempt.

    check_sizes_test.py PATH/TO/check_sizes.py
"""

import os
import subprocess
import sys
import tempfile


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)


def function(name, body_lines):
    return f"int {name}(int x) {{\n" + "".join("  x += 1;\n" for _ in range(body_lines)) + \
        "  return x;\n}\n"


def run(script, files):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            write(root, path, text)
        p = subprocess.run([sys.executable, script, "--root", root], capture_output=True,
                           text=True)
        return p.returncode, p.stdout + p.stderr


def expect(label, got, code, needle):
    rc, out = got
    ok = rc == code and needle in out
    print(("ok   " if ok else "FAIL ") + label + ("" if ok else f": exit {rc}, output:\n{out}"))
    return ok


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    script = sys.argv[1]
    short = function("shortRule", 10)
    long_fn = function("longRule", 80)  # 80 body lines + signature, return, brace: 83
    big = "".join(f"// line {i}\n" for i in range(501))
    results = [
        expect("a tree within the limits passes",
               run(script, {"analyzer/a.cc": short, "launcher/b.cc": "int b;\n"}), 0,
               "check_sizes: ok"),
        expect("an analyzer function over 80 lines fails, named",
               run(script, {"analyzer/a.cc": short + long_fn}), 1,
               "analyzer/a.cc:14: longRule: 83 lines, limit 80"),
        expect("a long function outside analyzer/ is not counted",
               run(script, {"launcher/a.cc": long_fn}), 0, "check_sizes: ok"),
        expect("a file over 500 lines fails, named",
               run(script, {"live/big.cc": big}), 1, "live/big.cc:1: file: 501 lines, limit 500"),
        expect("tests are exempt from the file limit",
               run(script, {"live/big_test.cc": big, "tests/x/big.sh": big}), 0,
               "check_sizes: ok"),
    ]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
