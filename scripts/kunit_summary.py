#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""kunit_summary.py JSON [--may-skip CASE]... [--suites REGEX] [--expect SUITE]...: our suites'
results from kunit.py's --json output.

kunit.py (tools/testing/kunit) writes its parsed KTAP as nested groups:
{"name", "sub_groups": [...], "test_cases": [{"name", "status"}], ...}.
Prints a line per test case of our suites (by default the rpcrdma_rs_*
ones and those of the generic abstractions, rust_kernel_llist and
rust_kernel_rdma_*; --suites REGEX for others) and a closing "N passed,
N failed"; exits 1 when any of them failed, crashed or was skipped, when
none of our suites (or no test case) is in the results, or when a suite
named with --expect is not.
A case named with --may-skip may be skipped instead of passing (a case
that needs what this build cannot have, such as the C file linked beside
ours); it is listed, and counted neither way.
"""

import json
import re
import sys

OURS = r"rpcrdma_rs_.*|rust_kernel_llist|rust_kernel_rdma_[a-z]+"


def suites(group, ours):
    """Every group whose name is one of our suites, at any depth."""
    if ours.fullmatch(group.get("name", "")):
        yield group
    for sub in group.get("sub_groups", []):
        yield from suites(sub, ours)


def main(path, may_skip, ours, expect):
    try:
        with open(path, encoding="utf-8") as f:
            root = json.load(f)
    except (OSError, ValueError) as e:
        print(f"kunit_summary: no results from kunit.py: {e}", file=sys.stderr)
        print("0 passed, 1 failed")
        return 1
    passed = failed = 0
    found = []
    for suite in suites(root, ours):
        found.append(suite["name"])
        for case in suite.get("test_cases", []):
            status = case.get("status")
            print(f"    {suite['name']}: {status} {case.get('name')}")
            if status in ("SKIP", "SKIPPED") and case.get("name") in may_skip:
                continue
            ok = status == "PASS"
            passed += ok
            failed += not ok
    missing = [s for s in expect if s not in found]
    if not found:
        print(f"kunit_summary: no suite matching {ours.pattern} in the results", file=sys.stderr)
    elif passed + failed == 0:
        print("kunit_summary: our suites ran no test case", file=sys.stderr)
    for s in missing:
        print(f"kunit_summary: suite {s} is not in the results", file=sys.stderr)
    print(f"{passed} passed, {failed + len(missing)} failed")
    return 0 if found and passed and not failed and not missing else 1


def option(args, name):
    """The values given to option NAME."""
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a == name]


if __name__ == "__main__":
    args = sys.argv[1:]
    ours = re.compile((option(args, "--suites") or [OURS])[-1])
    sys.exit(main(args[0], set(option(args, "--may-skip")), ours, option(args, "--expect")))
