"""The platform tag a wheel of native programs may honestly carry: the lowest manylinux_X_Y whose
policy allows every versioned symbol its ELF files need from glibc, libstdc++ and libgcc_s (the
libraries a manylinux wheel may take from the system; everything else must be inside it).

    python3 scripts/wheel_tag.py DIR           prints e.g. manylinux_2_35_x86_64
    python3 scripts/wheel_tag.py --explain DIR also says, per library, which file needs the most

The limits are those of the manylinux policies (PEP 600; pypa/auditwheel's
manylinux-policy.json, x86_64 and aarch64 alike for these symbol sets): for each glibc, the newest
GLIBCXX, CXXABI and GCC symbol version of the distributions that policy stands for. Exit codes: 0
the tag printed, 1 no policy fits or objdump failed (one line says which file and symbol), 2
usage.
"""
import os
import re
import subprocess
import sys

# glibc -> the newest (GLIBCXX, CXXABI, GCC) version the manylinux policy of that glibc allows.
POLICIES = [
    ((2, 17), (3, 4, 19), (1, 3, 7), (4, 8, 0)),
    ((2, 24), (3, 4, 22), (1, 3, 10), (4, 8, 0)),
    ((2, 28), (3, 4, 24), (1, 3, 11), (7, 0, 0)),
    ((2, 31), (3, 4, 28), (1, 3, 12), (7, 0, 0)),
    ((2, 34), (3, 4, 29), (1, 3, 13), (7, 0, 0)),
    ((2, 35), (3, 4, 30), (1, 3, 13), (12, 0, 0)),
    ((2, 36), (3, 4, 30), (1, 3, 13), (12, 0, 0)),
    ((2, 38), (3, 4, 30), (1, 3, 13), (12, 0, 0)),
    ((2, 39), (3, 4, 33), (1, 3, 15), (14, 0, 0)),
]
FAMILIES = ("GLIBC", "GLIBCXX", "CXXABI", "GCC")
MACHINES = {"x86-64": "x86_64", "littleaarch64": "aarch64"}
VERSION = re.compile(r"\((GLIBC|GLIBCXX|CXXABI|GCC)_([0-9][0-9.]*)\)")


def parse_version(text):
    return tuple(int(x) for x in text.split("."))


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def needed_versions(objdump_text):
    """{family: newest version} among the undefined symbols of `objdump -T` output."""
    newest = {}
    for line in objdump_text.splitlines():
        if "*UND*" not in line:
            continue
        m = VERSION.search(line)
        if m:
            v = parse_version(m.group(2))
            if v > newest.get(m.group(1), ()):
                newest[m.group(1)] = v
    return newest


def machine(objdump_header):
    m = re.search(r"file format elf64-(\S+)", objdump_header)
    return MACHINES.get(m.group(1)) if m else None


def scan(root, run=subprocess.run):
    """{family: (newest version, the file needing it)} over every ELF file under root, and the
    machine."""
    newest, arch = {}, None
    for folder, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            path = os.path.join(folder, name)
            if os.path.islink(path) or not is_elf(path):
                continue
            r = run(["objdump", "-T", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    universal_newlines=True)
            if r.returncode != 0:
                raise RuntimeError("objdump -T %s: %s" % (path, r.stderr.strip()))
            arch = arch or machine(r.stdout)
            for family, v in needed_versions(r.stdout).items():
                if v > newest.get(family, ((),))[0]:
                    newest[family] = (v, os.path.relpath(path, root))
    return newest, arch


def tag_for(newest, arch):
    """The lowest policy that allows every needed version, as manylinux_X_Y_ARCH; or raises."""
    need = {f: newest[f][0] for f in newest}
    for glibc, glibcxx, cxxabi, gcc in POLICIES:
        limits = {"GLIBC": glibc, "GLIBCXX": glibcxx, "CXXABI": cxxabi, "GCC": gcc}
        if all(need[f] <= limits[f] for f in need):
            return "manylinux_%d_%d_%s" % (glibc[0], glibc[1], arch)
    raise RuntimeError("no manylinux policy up to glibc 2.39 allows all of: " + describe(newest))


def describe(newest):
    return ", ".join("%s_%s (%s)" % (f, ".".join(map(str, newest[f][0])), newest[f][1])
                     for f in FAMILIES if f in newest)


def main(argv):
    explain = "--explain" in argv
    args = [a for a in argv if a != "--explain"]
    if len(args) != 1 or not os.path.isdir(args[0]):
        sys.stderr.write("usage: wheel_tag.py [--explain] DIR\n")
        return 2
    try:
        newest, arch = scan(args[0])
        if arch is None:
            raise RuntimeError("%s holds no ELF file of a known machine" % args[0])
        tag = tag_for(newest, arch)
    except (RuntimeError, OSError) as e:
        sys.stderr.write("wheel_tag.py: %s\n" % e)
        return 1
    if explain:
        sys.stderr.write("wheel_tag.py: %s: the newest needed are %s\n" % (tag, describe(newest)))
    print(tag)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
