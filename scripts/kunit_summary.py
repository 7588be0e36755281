#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""kunit_summary.py JSON [--may-skip CASE]...: our suites' results from kunit.py's --json output.

kunit.py (tools/testing/kunit) writes its parsed KTAP as nested groups:
{"name", "sub_groups": [...], "test_cases": [{"name", "status"}], ...}.
Prints a line per test case of the rpcrdma_rs_* suites and a closing
"N passed, N failed"; exits 1 when any of them failed, crashed or was
skipped, or when none of our suites (or no test case) is in the results.
A case named with --may-skip may be skipped instead of passing (a case
that needs what this build cannot have, such as the C file linked beside
ours); it is listed, and counted neither way.
"""

import json
import sys


def suites(group):
    """Every group whose name is one of our suites, at any depth."""
    if group.get("name", "").startswith("rpcrdma_rs_"):
        yield group
    for sub in group.get("sub_groups", []):
        yield from suites(sub)


def main(path, may_skip):
    try:
        with open(path, encoding="utf-8") as f:
            root = json.load(f)
    except (OSError, ValueError) as e:
        print(f"kunit_summary: no results from kunit.py: {e}", file=sys.stderr)
        print("0 passed, 1 failed")
        return 1
    passed = failed = 0
    found = []
    for suite in suites(root):
        found.append(suite["name"])
        for case in suite.get("test_cases", []):
            status = case.get("status")
            print(f"    {suite['name']}: {status} {case.get('name')}")
            if status in ("SKIP", "SKIPPED") and case.get("name") in may_skip:
                continue
            ok = status == "PASS"
            passed += ok
            failed += not ok
    if not found:
        print("kunit_summary: no rpcrdma_rs_* suite in the results", file=sys.stderr)
    elif passed + failed == 0:
        print("kunit_summary: our suites ran no test case", file=sys.stderr)
    print(f"{passed} passed, {failed} failed")
    return 0 if found and passed and not failed else 1


if __name__ == "__main__":
    args = sys.argv[1:]
    skips = {args[i + 1] for i, a in enumerate(args[:-1]) if a == "--may-skip"}
    sys.exit(main(args[0], skips))
