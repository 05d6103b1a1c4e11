"""scripts/wheel_tag.py: the lowest manylinux policy that allows the symbol versions needed."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))
import wheel_tag  # noqa: E402


def objdump(*versions):
    """`objdump -T` lines: one undefined symbol per version, and a defined one to be ignored."""
    lines = ["", "libx.so:     file format elf64-x86-64", "", "DYNAMIC SYMBOL TABLE:"]
    for i, v in enumerate(versions):
        lines.append("0000000000000000      DF *UND*\t0000000000000000 (%s) f%d" % (v, i))
    lines.append("0000000000001000 g    DF .text\t0000000000000010 (GLIBC_2.99) defined")
    return "\n".join(lines)


def tag(*versions):
    needed = wheel_tag.needed_versions(objdump(*versions))
    return wheel_tag.tag_for({f: (v, "libx.so") for f, v in needed.items()}, "x86_64")


class Tags(unittest.TestCase):
    def test_glibc_alone(self):
        self.assertEqual(tag("GLIBC_2.2.5", "GLIBC_2.17"), "manylinux_2_17_x86_64")
        self.assertEqual(tag("GLIBC_2.34"), "manylinux_2_34_x86_64")
        self.assertEqual(tag("GLIBC_2.36"), "manylinux_2_36_x86_64")

    def test_libstdcxx_raises_the_floor(self):
        # glibc 2.34's policy (RHEL 9, GCC 11) stops at GLIBCXX_3.4.29; GCC 12's 3.4.30 needs 2.35.
        self.assertEqual(tag("GLIBC_2.34", "GLIBCXX_3.4.29"), "manylinux_2_34_x86_64")
        self.assertEqual(tag("GLIBC_2.34", "GLIBCXX_3.4.30"), "manylinux_2_35_x86_64")
        self.assertEqual(tag("GLIBC_2.17", "CXXABI_1.3.13"), "manylinux_2_34_x86_64")
        self.assertEqual(tag("GLIBC_2.17", "GCC_12.0.0"), "manylinux_2_35_x86_64")

    def test_too_new_is_an_error(self):
        with self.assertRaisesRegex(RuntimeError, r"GLIBC_2\.41 \(libx\.so\)"):
            tag("GLIBC_2.41")

    def test_machine(self):
        self.assertEqual(wheel_tag.machine(objdump()), "x86_64")
        self.assertEqual(wheel_tag.machine("a:  file format elf64-littleaarch64"), "aarch64")
        self.assertIsNone(wheel_tag.machine("a:  file format elf32-i386"))


if __name__ == "__main__":
    unittest.main()
