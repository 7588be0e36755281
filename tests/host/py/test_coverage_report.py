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


# Two builds of one source, as the production and KUnit builds are: the
# KUnit build's runs count only in functions that are the same machine
# code in both (same bytes less relocated fields, same relocation targets;
# strings and other local data may differ in name and place).
BUILD_A = r"""
extern int ext_one(int); extern int ext_two(int);
extern void log_it(const char *);
int same(int x) { if (x > 3) log_it("big"); return ext_one(x) * 2; }
int differs(int x) { return x * 7 + 1; }
int other_callee(int x) { return ext_one(x) + 1; }
int only_here(int x) { return x - 1; }
static __attribute__((noinline)) int helper(int x) { return x * 5 + 3; }
int calls_helper(int x) { return helper(x) + 1; }
"""
BUILD_B = r"""
extern int ext_one(int); extern int ext_two(int);
extern void log_it(const char *);
static const char pad[] = "a string placed first, so that the other moves";
void use_pad(void) { log_it("another string, first"); log_it(pad); }
int same(int x) { if (x > 3) log_it("big"); return ext_one(x) * 2; }
int differs(int x) { return x * 9 + 1; }
int other_callee(int x) { return ext_two(x) + 1; }
static __attribute__((noinline, aligned(256))) int helper(int x) { return x * 5 + 3; }
int calls_helper(int x) { return helper(x) + 1; }
"""


class SameCode(unittest.TestCase):
    def build(self, d, name, source, names):
        cc = compiler()
        if cc is None or shutil.which("llvm-cxxfilt-19") is None:
            self.fail("needs a C compiler and llvm-cxxfilt-19 (scripts/setup installs both)")
        path = os.path.join(d, name)
        os.mkdir(path)
        with open(os.path.join(path, "t.c"), "w") as fh:
            fh.write(source)
        subprocess.run([cc, "-O2", "-fno-pic", "-fno-asynchronous-unwind-tables", "-c",
                        "-o", os.path.join(path, "rpcrdma.ko"), os.path.join(path, "t.c")],
                       check=True)
        with open(os.path.join(path, "sendpath-symbols.txt"), "w") as fh:
            fh.write("\n".join(names) + "\n")
        open(os.path.join(path, "shim-symbols.txt"), "w").close()
        return path

    def test_same_code(self):
        with tempfile.TemporaryDirectory() as d:
            a = coverage_report.Build("rust", self.build(
                d, "a", BUILD_A, ["same", "differs", "other_callee", "only_here", "calls_helper"]))
            b = coverage_report.Build("rust", self.build(d, "b", BUILD_B, ["use_pad"]), like=a)
            self.assertEqual(sorted(fn.name for fn in b.funcs),
                             ["calls_helper", "differs", "other_callee", "same"])
            # calls_helper's call of helper, resolved by the assembler to a
            # displacement that differs, has the same target by name.
            self.assertEqual(sorted(coverage_report.same_code(a, b)), ["calls_helper", "same"])


# Two joins and a branch with a single way into each successor: which
# edges instruction coverage can tell, for two sets of executed code.
EDGES = r"""
extern int g(int); extern int h(int);
int f(int x) { int y = 0; if (x > 3) y = g(x); else y = h(x + 7); if (y & 1) y = g(y); return y + 1; }
"""


class Edges(unittest.TestCase):
    def test_edges(self):
        with tempfile.TemporaryDirectory() as d:
            b = coverage_report.Build("rust", SameCode.build(self, d, "e", EDGES, ["f"]))
            fn = b.funcs[0]
            jumps = [(o, t.split()) for o, _, t in fn.insns if t.startswith("j")]
            self.assertEqual([t[0] for _, t in jumps], ["jl", "jne", "jmp", "je"],
                             "the compiler's code for f changed: " + str(fn.insns))
            # x > 3, y even: to the jmp after the first jne, then from its target.
            jmp_at, jmp_to = jumps[2][0], int(jumps[2][1][1], 16)
            fn.executed = {o for o, _, _ in fn.insns if o <= jmp_at or o >= jmp_to}
            e = coverage_report.edge_counts(b)
            # jl and jne: fall-through known taken (one way in), target
            # never run; je never ran.
            self.assertEqual((e["taken"], e["not taken"], e["unknown"]), (2, 4, 0), fn.insns)
            fn.executed = {o for o, _, _ in fn.insns}
            e = coverage_report.edge_counts(b)
            # Both of jl's; jne's fall-through; jne's target, je's target
            # and je's fall-through are joins.
            self.assertEqual((e["taken"], e["not taken"], e["unknown"]), (3, 0, 3))

if __name__ == "__main__":
    unittest.main()
