#!/usr/bin/env python3
"""Tests of scripts/check_layers.py on small trees made here: it passes a tree that keeps to the
floors and names the file, line and reason of each kind of forbidden include.

    check_layers_test.py SCRIPT
"""

import os
import subprocess
import sys
import tempfile

SCRIPT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "..", "..", "scripts", "check_layers.py")

GOOD = {
    "base/text.h": "",
    "format/reader.h": '#include "base/text.h"\n',
    "analyzer/engine.h": '#include "format/reader.h"\n',
    "live/snapshot.h": '#include "analyzer/engine.h"\n',
    "tui/draw.cc": '#include "live/snapshot.h"\n#include <vector>\n',
    "hostnccl/comm.h": '#include "third_party/nccl/nccl.h"\n',
    "third_party/nccl/nccl.h": "",
    "launcher/gather_test.cc": '#include "tests/support/process.h"\n',
    "tests/support/process.h": "",
}

failures = []


def run(files):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        p = subprocess.run([sys.executable, SCRIPT, "--root", root], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr


def expect(name, extra, rc, *needles):
    files = dict(GOOD)
    files.update(extra)
    got_rc, out = run(files)
    missing = [n for n in needles if n not in out]
    if got_rc != rc or missing:
        failures.append(f"{name}: rc {got_rc} (want {rc}), missing {missing}\n{out}")
    else:
        print(f"ok: {name}")


expect("a tree on its floors passes", {}, 0, "check_layers: ok")
expect("an include above its floor", {"format/bad.cc": '\n#include "analyzer/engine.h"\n'}, 1,
       'format/bad.cc:2: "analyzer/engine.h": format/ is on floor 1, analyzer/ on floor 2')
expect("nothing includes tui", {"launcher/agent.cc": '#include "tui/draw.h"\n', "tui/draw.h": ""},
       1, 'launcher/agent.cc:1: "tui/draw.h": tui/ is ncclrec-top')
expect("hostnccl stays apart", {"hostnccl/api.cc": '#include "base/text.h"\n'}, 1,
       'hostnccl/api.cc:1: "base/text.h": hostnccl/ may include only third_party')
expect("nobody includes hostnccl", {"interpose/shim.cc": '#include "hostnccl/comm.h"\n'}, 1,
       "hostnccl/ is a program of its own")
expect("a circle inside one floor",
       {"analyzer/uses_live.cc": '#include "live/snapshot.h"\n'}, 1,
       "folders include each other: analyzer -> live -> analyzer")
expect("test helpers only from tests", {"launcher/agent.cc": '#include "tests/support/process.h"\n'},
       1, 'launcher/agent.cc:1: "tests/support/process.h": launcher/ is on floor 4, tests/ on floor 5')
rc, out = run(GOOD)
bad_root = subprocess.run([sys.executable, SCRIPT, "--root", "/nonexistent/tree"],
                          capture_output=True, text=True)
if bad_root.returncode != 2 or "--root /nonexistent/tree: not a directory" not in bad_root.stderr:
    failures.append(f"bad --root: rc {bad_root.returncode}: {bad_root.stderr}")
else:
    print("ok: a bad --root is one line and exit 2")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
