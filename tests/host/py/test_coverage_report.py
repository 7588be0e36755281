#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tests of scripts/coverage_report.py's "never called" finding on a small
object compiled here, whose functions are reached, or not, in each of the
ways the report must tell apart."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../scripts"))
import coverage_report  # noqa: E402

# inlined_everywhere: global, its one call inlined, so an unreachable copy;
# unused: global, never mentioned; by_pointer: its address in a table;
# called_across: a static function called from another section (a
# relocation to its section, at its offset less 4); called_direct: a static
# noinline function called in the same section, which the assembler
# resolves with no relocation (a direct branch to it).
SOURCE = r"""
int inlined_everywhere(int x) { return x + 1; }
int unused(int x) { return x * 3; }
int by_pointer(int x) { return x - 7; }
int (*table[])(int) = { by_pointer };
static __attribute__((noinline)) int called_across(int x) { return x ^ 5; }
static __attribute__((noinline)) int called_direct(int x) { return x * x + 1; }
int entry(int x) { return inlined_everywhere(x) + called_direct(x); }
__attribute__((section(".text.unlikely"))) int cold_entry(int x) { return called_across(x); }
int (*entries[])(int) = { entry, cold_entry };
"""
NAMES = ["inlined_everywhere", "unused", "by_pointer", "called_across",
         "called_direct", "entry", "cold_entry"]


def compiler():
    for cc in ("clang-19", "clang", "gcc", "cc"):
        if shutil.which(cc):
            return cc
    return None


class CanRun(unittest.TestCase):
    def test_reasons(self):
        # Out of reach: padding, never-called copies, and what a reason
        # shows unreachable by design; anything else could run.
        self.assertFalse(coverage_report.can_run("padding"))
        self.assertFalse(coverage_report.can_run(coverage_report.UNCALLED))
        self.assertFalse(coverage_report.can_run("unreachable by design: a NULL guard"))
        self.assertTrue(coverage_report.can_run("test missing"))
        self.assertTrue(coverage_report.can_run("a partial post: the fault build's post_mid point does"))

    def test_excluded_counts(self):
        # What the can-run share leaves out, split as the caps count it.
        by_reason = {"padding": 5, coverage_report.UNCALLED: 3, "test missing": 88,
                     "unreachable by design: a NULL guard": 40,
                     "unreachable by design: an encoder failing": 27,
                     "a partial post: the fault build's post_mid point does": 28}
        self.assertEqual(coverage_report.excluded_counts(by_reason), {"emitted": 8, "claimed": 67})
        self.assertEqual(coverage_report.excluded_counts({"test missing": 4}), {"emitted": 0, "claimed": 0})


class NeverCalled(unittest.TestCase):
    def test_references(self):
        cc = compiler()
        if cc is None or shutil.which("llvm-cxxfilt-19") is None:
            self.fail("needs a C compiler and llvm-cxxfilt-19 (scripts/setup installs both)")
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "t.c")
            with open(src, "w") as fh:
                fh.write(SOURCE)
            subprocess.run([cc, "-O2", "-fno-pic", "-fno-asynchronous-unwind-tables", "-c",
                            "-o", os.path.join(d, "rpcrdma.ko"), src], check=True)
            with open(os.path.join(d, "sendpath-symbols.txt"), "w") as fh:
                fh.write("\n".join(NAMES) + "\n")
            open(os.path.join(d, "shim-symbols.txt"), "w").close()
            build = coverage_report.Build("rust", d)
        got = {fn.name: fn.referenced for fn in build.funcs}
        self.assertEqual(got, {"inlined_everywhere": False, "unused": False,
                               "by_pointer": True, "called_across": True,
                               "called_direct": True, "entry": True, "cold_entry": True})

    def test_reason(self):
        fn = coverage_report.Func("f", "crate", ".text", 0, 4)
        fn.referenced = False
        whole = {"fn": fn, "padding": False, "whole": True, "src": "src/x.rs:1"}
        self.assertEqual(coverage_report.reason_of(whole, []), coverage_report.UNCALLED)
        # A part of an unreachable function, or a whole one that is reached,
        # takes its reason from the file, as before.
        part = dict(whole, whole=False)
        self.assertEqual(coverage_report.reason_of(part, []), "test missing")
        fn2 = coverage_report.Func("g", "crate", ".text", 0, 4)
        reached = dict(whole, fn=fn2)
        self.assertEqual(coverage_report.reason_of(reached, []), "test missing")


if __name__ == "__main__":
    unittest.main()
