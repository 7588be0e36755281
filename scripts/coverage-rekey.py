#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""coverage-rekey.py [BASE]: moves the source line numbers that
tests/profile/coverage-reasons.txt names to where those lines are now.

The reasons match blocks by "FILE:LINE" (see the file's head), so an edit
above a claimed line turns its block into "test missing". This takes the
reasons file as it is in BASE (default HEAD: before the uncommitted edits),
reads `git diff -U0 BASE` for each source file a pattern names, rewrites
each line number after a "src/...:" in the pattern to its line now, and
writes the result: running it twice gives the same file, and edits of the
reasons file itself since BASE are replaced (rekey first, then edit). A number whose line was itself changed or
removed is left as it is and named on stderr: that claim needs a look.
Numbers inside a character class ("15[2-4]") are left alone too.
"""

import re
import subprocess
import sys

REASONS = "tests/profile/coverage-reasons.txt"


def line_map(base, path):
    """old line -> new line, for the lines the diff keeps; None if
    unchanged; the set of old lines the diff changed or removed."""
    out = subprocess.run(["git", "diff", "-U0", base, "--", path],
                         capture_output=True, text=True, check=True).stdout
    hunks = []
    for m in re.finditer(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", out, re.M):
        o, oc, n, nc = int(m[1]), int(m[2] or 1), int(m[3]), int(m[4] or 1)
        hunks.append((o, oc, n, nc))
    if not hunks:
        return None, set()
    touched = set()
    for o, oc, _n, _nc in hunks:
        touched.update(range(o, o + oc))

    def new(old):
        shift = 0
        for o, oc, n, nc in hunks:
            # A hunk with oc == 0 inserts after line o.
            end = o + oc if oc else o + 1
            if old >= end:
                shift = (n + nc) - (o + oc)
        return old + shift
    return new, touched


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else "HEAD"
    text = subprocess.run(["git", "show", f"{base}:{REASONS}"], capture_output=True,
                          text=True, check=True).stdout
    maps = {}
    loc = re.compile(r"src/((?:[\w-]+/)*[\w-]+)\\\.(rs|c):([0-9,|()\-\[\]*]+)")

    def rekey(m):
        path = f"src/{m[1]}.{m[2]}"
        if path not in maps:
            maps[path] = line_map(base, path)
        new, touched = maps[path]
        if new is None:
            return m[0]
        expr, out, i = m[3], "", 0
        for tok in re.finditer(r"\[[^\]]*\]|\d+", expr):
            out += expr[i:tok.start()]
            t = tok[0]
            if t.isdigit():
                if int(t) in touched:
                    print(f"coverage-rekey: {path}:{t} was itself edited: check its claim",
                          file=sys.stderr)
                else:
                    t = str(new(int(t)))
            out += t
            i = tok.end()
        out += expr[i:]
        return f"src/{m[1]}\\.{m[2]}:{out}"

    new_text = loc.sub(rekey, text)
    if new_text != open(REASONS).read():
        open(REASONS, "w").write(new_text)
        print(f"coverage-rekey: {REASONS} updated")


if __name__ == "__main__":
    main()
