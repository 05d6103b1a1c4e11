"""The wheel as a user gets it (docs/python.md, "Tested"): built by scripts/wheel.sh, installed
into a fresh venv in a scratch folder, used there, uninstalled. One step per ctest test:

  build            scripts/wheel.sh; the wheel's name, tag and files
  venv             a venv of Debian's python3 (its torch visible), the wheel installed
  unit             python/tests (the pure-Python part) with the venv's python
  import           `import ncclrec` first / too late / under LD_PRELOAD (import_check.py)
  job L LANG MODE  a sample through `ncclrec run` under Debian's torchrun or mpirun (jobs.py)
  tools            python -m ncclrec analyze|top|watch, the console scripts, cxxrun --nccl=host
  uninstall        pip uninstall leaves the venv as it was
  pyenv X.Y        all of it (but torchrun, which needs Debian's torch) on pyenv's CPython X.Y

Usage: wheel_test.py STEP [ARGS] --build DIR --source DIR --work DIR
Exit codes: 0 passed, 1 failed (the reason on stderr), 2 bad usage, 77 skipped (reason printed).
"""
import argparse
import glob
import json
import os
import re
import shutil
import sys
import zipfile

import jobs
from common import SKIP, Failure, Paths, run, skip

HERE = os.path.dirname(os.path.abspath(__file__))


def step_build(p):
    shutil.rmtree(p.work, ignore_errors=True)
    os.makedirs(p.work)
    r = run([os.path.join(p.source, "scripts", "wheel.sh"), "--build", p.build,
             os.path.join(p.work, "dist")], check=False)
    if r.returncode != 0:
        raise Failure("scripts/wheel.sh exited %d:\n%s" % (r.returncode, r.stdout + r.stderr))
    print(r.stdout, end="")
    wheel = r.stdout.strip().splitlines()[-1]
    if not os.path.isfile(wheel) or os.path.dirname(wheel) != os.path.join(p.work, "dist"):
        raise Failure("scripts/wheel.sh's last line is not the wheel: %r" % wheel)
    # The tag, again from the files as pip unpacks them.
    unpacked = os.path.join(p.work, "unpacked")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(unpacked)
    tag = run([sys.executable, os.path.join(p.source, "scripts", "wheel_tag.py"),
               unpacked]).stdout.strip()
    shutil.rmtree(unpacked)
    name = os.path.basename(wheel)
    if not re.match(r"^ncclrec-[0-9]+\.[0-9]+\.[0-9]+-py3-none-%s\.whl$" % re.escape(tag), name):
        raise Failure("%s: not ncclrec-VERSION-py3-none-%s.whl" % (name, tag))
    check_wheel_files(wheel)
    with open(p.wheel_file, "w") as f:
        f.write(wheel)


def check_wheel_files(wheel):
    want = ["ncclrec/__init__.py", "ncclrec/_version.py", "ncclrec/_bundle/lib/libncclrec.so",
            "ncclrec/_bundle/lib/libncclrec_dump.so", "ncclrec/_bundle/lib/libncclrec_format.so",
            "ncclrec/_bundle/lib/libprotobuf.so.32", "ncclrec/_bundle/lib/libunwind.so.8",
            "ncclrec/_bundle/lib/ncclrec/hostnccl/libnccl.so.2",
            "ncclrec/_bundle/lib/ncclrec/samples/sample_gated_save",
            "ncclrec/_bundle/share/ncclrec/samples/python/gated_save/gated_save.py",
            "ncclrec/_bundle/share/ncclrec/samples/gated_save/expected.json"]
    want += ["ncclrec/_bundle/bin/" + t for t in
             ("ncclrec-analyze", "ncclrec-top", "ncclrec-watch", "cxxrun")]
    with zipfile.ZipFile(wheel) as z:
        infos = {i.filename: i for i in z.infolist()}
        meta = [n for n in infos if n.endswith(".dist-info/WHEEL")]
        wheel_meta = z.read(meta[0]).decode() if meta else ""
        entry = [n for n in infos if n.endswith(".dist-info/entry_points.txt")]
        scripts = z.read(entry[0]).decode() if entry else ""
    missing = [w for w in want if w not in infos]
    if missing:
        raise Failure("the wheel lacks %s" % ", ".join(missing))
    for t in ("ncclrec-analyze", "ncclrec-top", "ncclrec-watch", "cxxrun"):
        mode = infos["ncclrec/_bundle/bin/" + t].external_attr >> 16
        if not mode & 0o111:
            raise Failure("%s is not executable in the wheel (mode %o)" % (t, mode))
    for n, i in infos.items():
        if (i.external_attr >> 16) & 0o170000 == 0o120000:
            raise Failure("%s is a symbolic link in the wheel" % n)
    if "Root-Is-Purelib: false" not in wheel_meta:
        raise Failure("the wheel's WHEEL file says: %s" % wheel_meta)
    for script in ("ncclrec = ", "ncclrec-analyze = ", "ncclrec-top = ", "ncclrec-watch = ",
                   "cxxrun = "):
        if script not in scripts:
            raise Failure("no console script %s...: %s" % (script, scripts))
    print("ok: %d files, tag and contents as documented" % len(infos))


def venv_files(venv):
    """Every file and link under the venv, relative; pip's own caches aside."""
    found = set()
    for folder, dirs, files in os.walk(venv):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            found.add(os.path.relpath(os.path.join(folder, name), venv))
    return found


def make_venv(p, python, venv, system_site=False):
    shutil.rmtree(venv, ignore_errors=True)
    cmd = [python, "-m", "venv"] + (["--system-site-packages"] if system_site else []) + [venv]
    r = run(cmd, check=False)
    if r.returncode != 0:
        raise Failure("%s failed: %s" % (" ".join(cmd), r.stderr.strip()))
    pip(venv, "--version")  # pip's first run writes what it writes, before the snapshot
    before = sorted(venv_files(venv))
    with open(venv + ".files", "w") as f:
        f.write("\n".join(before))
    pip(venv, "install", "--no-index", "--no-deps", p.wheel())
    for script in ("ncclrec", "ncclrec-analyze", "ncclrec-top", "ncclrec-watch", "cxxrun"):
        if not os.access(os.path.join(venv, "bin", script), os.X_OK):
            raise Failure("pip install made no %s in %s/bin" % (script, venv))


def pip(venv, *args):
    return run([os.path.join(venv, "bin", "python"), "-m", "pip", "--disable-pip-version-check",
                "--no-input"] + list(args))


def step_venv(p):
    make_venv(p, "/usr/bin/python3", p.venv, system_site=True)
    print("ok: %s installed into %s" % (os.path.basename(p.wheel()), p.venv))


def step_unit(p, venv=None):
    venv = venv or p.venv
    r = run([os.path.join(venv, "bin", "python"), "-m", "unittest", "discover", "-s",
             os.path.join(p.source, "python", "tests"), "-t",
             os.path.join(p.source, "python", "tests")], check=False)
    print(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "")
    if r.returncode != 0:
        raise Failure("python/tests failed with %s:\n%s" % (venv, r.stderr))


def step_import(p, venv=None):
    venv = venv or p.venv
    python = os.path.join(venv, "bin", "python")
    lib = p.nccl_user_lib()
    check = os.path.join(HERE, "import_check.py")
    for mode in ("first", "late"):
        dumps = os.path.join(p.work, "import-" + os.path.basename(venv) + "-" + mode)
        shutil.rmtree(dumps, ignore_errors=True)
        r = run([python, check, mode, lib], env=dict(p.env(), NCCLREC_DIR=dumps))
        said = json.loads(r.stdout.strip().splitlines()[-1])
        if said["result"] != 0:
            raise Failure("%s: the library's NCCL calls returned %s: %s" % (mode, said, r.stderr))
        if mode == "first":
            if not said["recording"] or r.stderr.strip():
                raise Failure("import ncclrec first: %s; stderr: %s" % (said, r.stderr))
            check_recorded(p, venv, dumps, "train_step", "import_check.py")
        else:
            lines = [l for l in r.stderr.splitlines() if l.startswith("ncclrec:")]
            if said["recording"] or len(lines) != 1 or "too late" not in lines[0]:
                raise Failure("import ncclrec late: %s; stderr: %s" % (said, r.stderr))
            if glob.glob(os.path.join(dumps, "*.bbox")):
                raise Failure("import ncclrec late: something was recorded in %s" % dumps)
    shim = run([os.path.join(venv, "bin", "ncclrec"), "path", "shim"]).stdout.strip()
    r = run([python, check, "preloaded"], env=dict(p.env(), LD_PRELOAD=shim))
    said = json.loads(r.stdout.strip().splitlines()[-1])
    if not said["recording"] or said["shims_mapped"] != 1 or r.stderr.strip():
        raise Failure("import ncclrec under LD_PRELOAD: %s; stderr: %s" % (said, r.stderr))
    print("ok: import first records the library's calls (call site train_step() "
          "import_check.py), import late says so once and records nothing, preloaded loads "
          "nothing more")


def check_recorded(p, venv, dumps, function, file_name):
    r = run([os.path.join(venv, "bin", "ncclrec"), "analyze", "--events", "--json", dumps])
    ranks = json.loads(r.stdout)["ranks"]
    events = [e for rank in ranks for e in rank["events"] if e["op"] == "ncclAllReduce"]
    if len(events) != 3:
        raise Failure("%d all-reduces recorded in %s, not 3: %s" % (len(events), dumps, r.stdout))
    stacks = {s["id"]: s for rank in ranks for s in rank["stacks"]}
    frames = stacks[events[0]["stack_id"]]["frames"]
    python = [f for f in frames if f.get("python")]
    if not any(f["function"] == function and os.path.basename(f["file"] or "") == file_name
               for f in python):
        raise Failure("the recorded stack has no Python frame %s() %s: %s"
                      % (function, file_name, json.dumps(frames)))


def step_tools(p):
    bin_ = os.path.join(p.venv, "bin")
    python = os.path.join(bin_, "python")
    version = run([os.path.join(bin_, "ncclrec"), "--version"]).stdout.split()[1]
    for tool in ("analyze", "top", "watch"):
        out = run([python, "-m", "ncclrec", tool, "--version"]).stdout
        if not out.startswith("ncclrec-%s %s (git " % (tool, version)):
            raise Failure("python -m ncclrec %s --version: %r (ncclrec %s)" % (tool, out, version))
    for script in ("ncclrec-analyze", "ncclrec-top", "ncclrec-watch", "cxxrun"):
        out = run([os.path.join(bin_, script), "--version"]).stdout
        if not out.startswith("%s %s (git " % (script, version)):
            raise Failure("%s --version: %r" % (script, out))
    golden = os.path.join(p.source, "tests", "data", "rank_gated_collective")
    r = run([python, "-m", "ncclrec", "analyze", "--json", golden], check=False)
    if r.returncode != 3 or json.loads(r.stdout)["verdict"]["class"] != "rank_gated_collective":
        raise Failure("python -m ncclrec analyze on %s: exit %d: %s" % (golden, r.returncode,
                                                                       r.stdout[:300]))
    # A black box for the live tools: one process recorded by `import ncclrec` (import_check.py).
    dumps = os.path.join(p.work, "tools-dumps")
    shutil.rmtree(dumps, ignore_errors=True)
    run([python, os.path.join(HERE, "import_check.py"), "first", p.nccl_user_lib()],
        env=dict(p.env(), NCCLREC_DIR=dumps))
    r = run([python, "-m", "ncclrec", "top", "--once", dumps], check=False)
    if r.returncode != 0 or "1 of 1: 0 alive, 1 exited" not in r.stdout:
        raise Failure("python -m ncclrec top --once: exit %d: %s%s" % (r.returncode, r.stdout,
                                                                      r.stderr))
    r = run([python, "-m", "ncclrec", "watch", "--dir", dumps, "--ended", "exit code 0"])
    with open(os.path.join(dumps, "report.json")) as f:
        doc = json.load(f)
    if doc["reason"] != "ended" or doc["verdict"]["class"] != "no_hang":
        raise Failure("python -m ncclrec watch --ended: %s" % r.stdout)
    jobs.cxxrun_from_wheel(p)


def step_uninstall(p, venv=None):
    venv = venv or p.venv
    pip(venv, "uninstall", "--yes", "ncclrec")
    with open(venv + ".files") as f:
        before = set(f.read().split("\n"))
    after = venv_files(venv)
    if after != before:
        raise Failure("pip uninstall left %s and removed %s"
                      % (sorted(after - before)[:20], sorted(before - after)[:20]))
    print("ok: pip uninstall left %s as it was before the install (%d files)"
          % (venv, len(after)))


def pyenv_python(version):
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = sorted(glob.glob(os.path.join(root, "versions", version + ".*", "bin",
                                          "python" + version)))
    return found[-1] if found else None


def step_pyenv(p, version):
    python = pyenv_python(version)
    if python is None:
        skip("no pyenv build of CPython %s on this machine (pyenv install %s)" % (version, version))
    venv = os.path.join(p.work, "venv-" + version)
    make_venv(p, python, venv)
    step_unit(p, venv)
    step_import(p, venv)
    jobs.run_job(p, "mpirun", "python", "faulty", venv)
    step_uninstall(p, venv)
    print("ok: CPython %s (%s)" % (version, python))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step")
    ap.add_argument("args", nargs="*")
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    p = Paths(a.build, a.source, a.work)
    steps = {"build": step_build, "venv": step_venv, "unit": step_unit, "import": step_import,
             "tools": step_tools, "uninstall": step_uninstall, "pyenv": step_pyenv,
             "job": jobs.step_job}
    if a.step not in steps:
        ap.error("unknown step %s" % a.step)
    try:
        steps[a.step](p, *a.args)
    except Failure as e:
        print("FAIL: wheel %s %s: %s" % (a.step, " ".join(a.args), e), file=sys.stderr)
        return 1
    except SystemExit as e:
        if e.code == SKIP:
            return SKIP
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
