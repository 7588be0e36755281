#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""profile_annotate.py RUN FLAVOUR CLASS VERSION [SYMBOL-REGEX]: the
instruction profile of one window, per instruction.

For the Send-path symbols of FLAVOUR (as profile_report.py attributes
them) in the window of CLASS and VERSION of RUN (a directory of
scripts/profile.sh), prints each symbol's instructions per reply and,
for symbols matching SYMBOL-REGEX (default: none), every instruction
with its executions per reply next to the module's disassembly
(objdump of RUN/build-FLAVOUR/rpcrdma.ko, or of the build dir the run
names). Symbols of the kernel (rust_helper_*) are shown without
disassembly. For finding what to make cheaper; it asserts nothing.
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_report as pr  # noqa: E402


def disassembly(ko):
    """{symbol: [(offset in symbol, text)]} of the module's functions."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-r", ko],
                         check=True, capture_output=True, text=True).stdout
    funcs, cur, base = {}, None, 0
    head = re.compile(r"^([0-9a-f]+) <(.+)>:$")
    insn = re.compile(r"^\s+([0-9a-f]+):\s+(.*)$")
    for line in out.splitlines():
        m = head.match(line)
        if m:
            cur, base = m.group(2), int(m.group(1), 16)
            funcs[cur] = []
            continue
        m = insn.match(line)
        if m and cur is not None:
            funcs[cur].append((int(m.group(1), 16) - base, m.group(2).strip()))
        elif cur is not None and line.strip() and funcs[cur]:
            # A relocation line: append it to the instruction it belongs to.
            off, text = funcs[cur][-1]
            funcs[cur][-1] = (off, text + "   " + line.strip())
    return funcs


def main():
    if len(sys.argv) < 5:
        print(__doc__)
        sys.exit(2)
    run, flavour, cls, vers = sys.argv[1:5]
    pattern = re.compile(sys.argv[5]) if len(sys.argv) > 5 else None
    build = os.path.join(run, f"build-{flavour}")
    ko = os.path.join(build, "rpcrdma.ko")
    if not os.path.exists(ko):
        src = {"c": "c", "rust": "rust-prod"}[flavour]
        ko = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", src, "rpcrdma.ko")
    window = None
    with open(os.path.join(run, "profile-windows.txt")) as f:
        for line in f:
            k, fl, c, v, n = line.split()
            if (fl, c, v) == (flavour, cls, vers) and n != "failed":
                window = int(k)
    if window is None:
        sys.exit(f"no window {flavour} {cls} {vers} in {run}")
    table = pr.read_syms(os.path.join(run, f"kallsyms-{flavour}.txt"))
    names = pr.sendpath_names(build, flavour)
    counts = pr.window_counts(os.path.join(run, f"insn.{window}"))[0]
    per_insn, replies = pr.attribute(counts, table, flavour, names)[:2]
    if not replies:
        sys.exit("no replies counted")
    funcs = disassembly(ko) if pattern else {}
    total = sum(sum(v.values()) for v in per_insn.values())
    print(f"{flavour} {cls} {vers}: {replies} replies, {total / replies:.1f} Send-path instructions per reply")
    for name, insns in sorted(per_insn.items(), key=lambda kv: -sum(kv[1].values())):
        print(f"{sum(insns.values()) / replies:8.1f}  {name}")
        if not pattern or not pattern.search(name) or name not in funcs:
            continue
        for off, text in funcs[name]:
            c = insns.get(off, 0)
            print(f"          {c / replies:7.2f}  {off:5x}  {text}")


if __name__ == "__main__":
    main()
