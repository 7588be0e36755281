#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""profile_report.py [--plot=PNG] [--gate=FILE] RUN [RUN...]: the instruction
profile's tables, from the runs of scripts/profile.sh.

Each RUN holds the plugin's window files (insn.K: "address count" per
executed kernel instruction, and "total N"), profile-windows.txt ("K FLAVOUR
CLASS VERSION N" in the order the guest opened them), per flavour the
kernel's text symbols with that flavour's module loaded (kallsyms-F.txt),
and the symbol lists of the builds that ran (build-F/).

Attribution: an address belongs to the text symbol at or below it. The Send
path's own code is, for c, the functions of svc_rdma_sendto.o (in rpcrdma);
for rust, the functions of the crate's object and of its C shim (in rpcrdma)
and the kernel's rust_helper_* functions (static inlines the crate reaches
through the kernel crate; C inlines them). Replies are counted exactly: the
executions of the first instructions of the Send completion handler (one
per Send, error replies included).

Inclusive counts (the window files' third and fourth columns, from the
plugin's shadow call stacks): every instruction the Send path executed
itself or in what it called, interrupts excluded, and the part of it in
batch work (wake-ups, the allocators' batch transfers), whose cost follows
shared state rather than the caller. Checked: each Send-path instruction's
inclusive count is its count, no entry-text instruction is counted
inclusively, no shadow stack overflowed ("MISSING" otherwise, which the
make-check smoke fails on).

Prints, per class and version: replies, Send-path instructions per reply
(for rust also the part spent in the C shim and the kernel's Rust helpers,
"glue": C has those inline) and kernel instructions per reply for c and
rust and their ratio (first run); then inclusive instructions per reply,
with and without batch work, summed over the runs (the flavours take turns
going first), and rust/c without batch work per run; with more runs, the
largest relative difference between runs of the same window, in total and
per Send-path symbol. Writes the per-symbol breakdown to
RUN/profile-symbols.txt and the inclusive one to RUN/profile-inclusive.txt.

With --gate=FILE (tests/profile/cost-gate.txt), the cost gate: for each
class and version the file lists, a PASS: or FAIL: line saying whether
rust/c of the Send path's own instructions per reply (first run) and of
its inclusive instructions without batch work (summed over the runs) are
within the file's bounds. A class without counts fails.
"""

import bisect
import os
import re
import sys

# The Send completion's entry: C's handler; for Rust, the `ib_cqe.done` of
# a posted ctxt (rdma::cq's `done_trampoline::<SendDone<WcSend>>`,
# src/rust/kernel/rdma/cq.rs).
COMPLETION = {"c": re.compile(r"^svc_rdma_wc_send$"),
              "rust": re.compile(r"15done_trampoline.*8SendDone.*6WcSend")}


def read_syms(path):
    """Sorted (address, name, module) of the text symbols in a kallsyms dump."""
    syms = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 3:
                continue
            mod = parts[3].strip("[]") if len(parts) > 3 else ""
            syms.append((int(parts[0], 16), parts[2], mod))
    syms.sort()
    return syms


def sendpath_names(build, flavour):
    names = set()
    for f in ("sendpath-symbols.txt", "shim-symbols.txt"):
        p = os.path.join(build, f)
        if os.path.exists(p):
            names.update(line.strip() for line in open(p) if line.strip())
    return names


def shim_names(build):
    p = os.path.join(build, "shim-symbols.txt")
    return {line.strip() for line in open(p)} if os.path.exists(p) else set()


def is_sendpath(flavour, names, name, mod):
    if mod == "rpcrdma" and name in names:
        return True
    return flavour == "rust" and mod == "" and name.startswith("rust_helper_")


def window_counts(path):
    """({address: count}, {address: inclusive count}, total, shadow-stack
    statistics) of one window file."""
    counts, incl, total, shadow = {}, {}, 0, {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts[0] == "total":
                total = int(parts[1])
            elif parts[0] == "shadow":
                shadow = {k: int(v) for k, v in zip(parts[1::2], parts[2::2])}
            else:
                a = int(parts[0], 16)
                counts[a] = int(parts[1])
                if len(parts) > 2 and parts[2] != "0":
                    incl[a] = (int(parts[2]), int(parts[3]) if len(parts) > 3 else 0)
    return counts, incl, total, shadow


def attribute(counts, table, flavour, names):
    """The Send-path instructions of one window: ({symbol: {offset: count}},
    replies, [address]), replies being the executions of the completion
    handler's first instructions (one per Send)."""
    starts = [s[0] for s in table]
    per_insn, first, own = {}, {}, []
    for addr, c in counts.items():
        i = bisect.bisect_right(starts, addr) - 1
        if i < 0:
            continue
        start, name, mod = table[i]
        if COMPLETION[flavour].search(name) and mod == "rpcrdma" and addr - start < 16:
            first[name] = max(first.get(name, 0), c)
        if is_sendpath(flavour, names, name, mod):
            per_insn.setdefault(name, {})[addr - start] = c
            own.append(addr)
    return per_insn, sum(first.values()), own


def entry_text(table):
    """The kernel's entry text, [start, end), from its symbols."""
    marks = {name: a for a, name, mod in table if mod == "" and name in
             ("__entry_text_start", "__entry_text_end")}
    return marks.get("__entry_text_start", 0), marks.get("__entry_text_end", 0)


def inclusive_by_symbol(incl, table):
    """{(symbol, module): inclusive count} of one window."""
    starts = [s[0] for s in table]
    out = {}
    for addr, (c, _) in incl.items():
        i = bisect.bisect_right(starts, addr) - 1
        key = (table[i][1], table[i][2]) if i >= 0 else ("?", "")
        out[key] = out.get(key, 0) + c
    return out


def analyse(run, builds):
    """{(flavour, class, version): result} for one run."""
    syms = {}
    windows = []
    with open(os.path.join(run, "profile-windows.txt")) as f:
        for line in f:
            k, flavour, cls, vers, n = line.split()
            windows.append((int(k), flavour, cls, vers, n))
    out = {}
    for k, flavour, cls, vers, n in windows:
        if n == "failed":
            continue
        if flavour not in syms:
            syms[flavour] = read_syms(os.path.join(run, f"kallsyms-{flavour}.txt"))
        names = sendpath_names(builds[flavour], flavour)
        shims = shim_names(builds[flavour])
        counts, incl, total, shadow = window_counts(os.path.join(run, f"insn.{k}"))
        per_insn, replies, own = attribute(counts, syms[flavour], flavour, names)
        incl_sym = inclusive_by_symbol(incl, syms[flavour])
        # Every Send-path instruction runs on the Send path's behalf: its
        # inclusive count must be its count, exactly.
        uncovered = sum(1 for a in own if incl.get(a, (0, 0))[0] != counts[a])
        # Interrupts, exceptions and system calls run behind a barrier: no
        # instruction of the entry text may be counted inclusively.
        lo, hi = entry_text(syms[flavour])
        in_entry = sum(c for a, (c, _) in incl.items() if lo <= a < hi)
        per_sym = {name: sum(v.values()) for name, v in per_insn.items()}
        glue = sum(n for name, n in per_sym.items()
                   if name.startswith("rust_helper_") or name in shims)
        out[(flavour, cls, vers)] = {
            "replies": replies, "total": total, "sendpath": sum(per_sym.values()), "glue": glue,
            "per_sym": per_sym, "rpcs": int(n),
            "inclusive": sum(c for c, _ in incl.values()),
            "batch": sum(w for _, w in incl.values()), "incl_sym": incl_sym, "shadow": shadow,
            "uncovered": uncovered, "in_entry": in_entry}
    return out


def ratio(a, b):
    return f"{a / b:.3f}" if b else "-"


def plot(path, rows):
    """Bars of rust/c per class: Send-path (own, and inclusive without
    batch work) and kernel instructions per reply."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("    (no plot: matplotlib is not installed)")
        return
    labels = [f"{cls} {vers}" for cls, vers, *_ in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(10, 4.5))
    ax.bar([i - 0.27 for i in x], [r[2] for r in rows], 0.27, label="Send-path instructions per reply (own)")
    ax.bar([i for i in x], [r[4] for r in rows], 0.27,
           label="Send-path instructions per reply, inclusive, without batch work")
    ax.bar([i + 0.27 for i in x], [r[3] for r in rows], 0.27, label="kernel instructions per reply")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("rust / c (executed instructions)")
    ax.set_title("Instruction-exact profile under TCG: rust / c per reply class")
    ax.set_ylim(0, 1.5)
    ax.legend(fontsize=7, loc="upper left", ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"    plot: {path}")


def read_gate(path):
    """(class, version) -> (own rust/c max, inclusive rust/c max)."""
    gate = {}
    with open(path) as f:
        for line in f:
            parts = line.split("#", 1)[0].split()
            if not parts:
                continue
            if len(parts) != 4:
                raise SystemExit(f"{path}: bad line: {line.strip()}")
            gate[(parts[0], parts[1])] = (float(parts[2]), float(parts[3]))
    return gate


def check_gate(gate, own, inclusive):
    """Prints a PASS:/FAIL: line per gated class (make check counts them)."""
    for (cls, vers), (own_max, incl_max) in sorted(gate.items(), key=lambda x: (x[0][1], x[0][0])):
        o, i = own.get((cls, vers)), inclusive.get((cls, vers))
        if o is None or i is None:
            print(f"FAIL: cost gate {cls} {vers}: no counts for both flavours")
            continue
        verdict = "PASS" if o <= own_max and i <= incl_max else "FAIL"
        print(f"{verdict}: cost gate {cls} {vers}: rust/c own {o:.3f} (max {own_max:.3f}),"
              f" inclusive without batch work {i:.3f} (max {incl_max:.3f})")


def main():
    args = sys.argv[1:]
    plot_path = gate_path = None
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt.startswith("--plot="):
            plot_path = opt[len("--plot="):]
        elif opt.startswith("--gate="):
            gate_path = opt[len("--gate="):]
        else:
            raise SystemExit(f"profile_report.py: unknown option {opt}")
    gate = read_gate(gate_path) if gate_path else None
    gate_own, gate_incl = {}, {}
    runs = args
    results = [analyse(r, {f: os.path.join(r, f"build-{f}") for f in ("c", "rust")}) for r in runs]
    first = results[0]
    classes = sorted({(cls, vers) for (_, cls, vers) in first},
                     key=lambda cv: (cv[1], cv[0]))

    def per_reply(f, cls, vers, what):
        vals = [res.get((f, cls, vers)) for res in results]
        vals = [v for v in vals if v and v["replies"]]
        replies = sum(v["replies"] for v in vals)
        return sum(what(v) for v in vals) / replies if replies else 0

    def no_batch(v):
        return v["inclusive"] - v["batch"]

    print("    class           vers  replies(c/rust)  send-path insns/reply: c    rust (glue)  rust/c"
          "   kernel insns/reply: c      rust   rust/c")
    rows = []
    for cls, vers in classes:
        c, r = first.get(("c", cls, vers)), first.get(("rust", cls, vers))
        if not c or not r:
            print(f"    {cls:15} {vers:5} MISSING: no window for {'c' if not c else 'rust'}")
            continue
        for f, v in (("c", c), ("rust", r)):
            if not v["replies"] or not v["sendpath"]:
                print(f"    {cls:15} {vers:5} MISSING: {f} counted {v['replies']} replies,"
                      f" {v['sendpath']} Send-path instructions")
        cs = c["sendpath"] / c["replies"] if c["replies"] else 0
        rs = r["sendpath"] / r["replies"] if r["replies"] else 0
        ct = c["total"] / c["replies"] if c["replies"] else 0
        rt = r["total"] / r["replies"] if r["replies"] else 0
        rg = r["glue"] / r["replies"] if r["replies"] else 0
        print(f"    {cls:15} {vers:5} {c['replies']:>6}/{r['replies']:<6}"
              f"   {cs:>20.0f} {rs:>7.0f} ({rg:>3.0f}) {ratio(rs, cs):>8}"
              f"   {ct:>18.0f} {rt:>9.0f} {ratio(rt, ct):>8}")
        cn, rn = (per_reply(f, cls, vers, no_batch) for f in ("c", "rust"))
        if cs and rs:
            gate_own[(cls, vers)] = rs / cs
        if cn and rn:
            gate_incl[(cls, vers)] = rn / cn
        if cs and ct:
            rows.append((cls, vers, rs / cs, rt / ct, rn / cn if cn else 0))
    print("    inclusive Send-path instructions per reply: its own and all it calls (interrupts"
          " excluded); without batch work: less wake-ups and the allocators' batch transfers"
          + (f"; summed over the {len(results)} boots" if len(results) > 1 else ""))
    print("    class           vers   inclusive: c      rust   rust/c"
          "   without batch work: c    rust   rust/c   batch work: c   rust"
          + ("   rust/c without batch work per boot" if len(results) > 1 else ""))

    for cls, vers in classes:
        c, r = first.get(("c", cls, vers)), first.get(("rust", cls, vers))
        if not c or not r or not c["replies"] or not r["replies"]:
            continue
        if not c["inclusive"] or not r["inclusive"]:
            print(f"    {cls:15} {vers:5} MISSING: no inclusive counts")
            continue
        ci, ri = (per_reply(f, cls, vers, lambda v: v["inclusive"]) for f in ("c", "rust"))
        cw, rw = (per_reply(f, cls, vers, lambda v: v["batch"]) for f in ("c", "rust"))
        boots = []
        for res in results if len(results) > 1 else []:
            c2, r2 = res.get(("c", cls, vers)), res.get(("rust", cls, vers))
            if c2 and r2 and c2["replies"] and r2["replies"] and no_batch(c2):
                boots.append(ratio(no_batch(r2) / r2["replies"], no_batch(c2) / c2["replies"]))
        print(f"    {cls:15} {vers:5} {ci:>14.0f} {ri:>9.0f} {ratio(ri, ci):>8}"
              f" {ci - cw:>23.0f} {ri - rw:>7.0f} {ratio(ri - rw, ci - cw):>8}"
              f" {cw:>15.0f} {rw:>6.0f}" + (f"   {' '.join(boots)}" if boots else ""))
    uncovered = [" ".join(k) for res in results for k, v in res.items() if v["uncovered"]]
    in_entry = [" ".join(k) for res in results for k, v in res.items() if v["in_entry"]]
    overflows = [" ".join(k) for res in results for k, v in res.items()
                 if v["shadow"].get("overflows")]
    windows = sum(len(res) for res in results)
    if uncovered:
        print(f"    MISSING: inclusive counts differ from the Send path's own in {', '.join(uncovered)}")
    else:
        print(f"    inclusive counts include every Send-path instruction exactly, in all {windows} windows")
    if in_entry:
        print(f"    MISSING: interrupt or system-call entry code counted inclusively in {', '.join(in_entry)}")
    else:
        print(f"    no instruction of the entry text counted inclusively, in all {windows} windows")
    if overflows:
        print(f"    MISSING: shadow stacks past their depth limit in {', '.join(overflows)}")
    if gate is not None:
        check_gate(gate, gate_own, gate_incl)
    if plot_path and rows:
        plot(plot_path, rows)
    for run, res in zip(runs, results):
        with open(os.path.join(run, "profile-symbols.txt"), "w") as f:
            for (flavour, cls, vers), v in sorted(res.items()):
                for name, n in sorted(v["per_sym"].items(), key=lambda x: -x[1]):
                    per = n / v["replies"] if v["replies"] else 0
                    f.write(f"{flavour} {cls} {vers} {per:.1f} {name}\n")
        with open(os.path.join(run, "profile-inclusive.txt"), "w") as f:
            for (flavour, cls, vers), v in sorted(res.items()):
                f.write(f"{flavour} {cls} {vers} shadow {v['shadow']}\n")
                for (name, mod), n in sorted(v["incl_sym"].items(), key=lambda x: -x[1]):
                    per = n / v["replies"] if v["replies"] else 0
                    if per >= 0.05:
                        f.write(f"{flavour} {cls} {vers} {per:.1f} {name} {mod}\n")
    if len(results) > 1:
        worst = {"sendpath": (0.0, ""), "total": (0.0, ""), "symbol": (0.0, ""),
                 "inclusive": (0.0, ""), "nobatch": (0.0, "")}

        def note(what, values, where):
            values = [v for v in values if v]
            if len(values) > 1:
                d = (max(values) - min(values)) / min(values)
                if d > worst[what][0]:
                    worst[what] = (d, where)

        for key in first:
            vals = [res[key] for res in results if key in res and res[key]["replies"]]
            where = " ".join(key)
            note("sendpath", [v["sendpath"] / v["replies"] for v in vals], where)
            note("total", [v["total"] / v["replies"] for v in vals], where)
            note("inclusive", [v["inclusive"] / v["replies"] for v in vals], where)
            note("nobatch", [(v["inclusive"] - v["batch"]) / v["replies"] for v in vals], where)
            if not vals:
                continue
            big = {s for s, n in vals[0]["per_sym"].items() if n >= 0.01 * vals[0]["sendpath"]}
            for sym in big:
                note("symbol", [v["per_sym"].get(sym, 0) / v["replies"] for v in vals], f"{where} {sym}")
        print(f"    repeatability over {len(results)} runs (largest difference between runs):"
              f" Send-path instructions per reply {100 * worst['sendpath'][0]:.2f}%"
              f" ({worst['sendpath'][1]}), kernel instructions per reply"
              f" {100 * worst['total'][0]:.2f}% ({worst['total'][1]}); one Send-path symbol"
              f" (>= 1% of the path) {100 * worst['symbol'][0]:.2f}% ({worst['symbol'][1]});"
              f" inclusive {100 * worst['inclusive'][0]:.2f}% ({worst['inclusive'][1]}),"
              f" inclusive without batch work {100 * worst['nobatch'][0]:.2f}% ({worst['nobatch'][1]})")

if __name__ == "__main__":
    main()
