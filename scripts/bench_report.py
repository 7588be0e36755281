#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""bench_report.py RUN_DIR: turn a bench run's bench.jsonl into
results.json, table.md (Rust/C ratios with 95% confidence intervals from
the paired rounds, server CPU per operation, ceiling fraction) and, where
matplotlib is installed, ratios.png."""

import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

# Two-sided 95% Student t quantiles by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365,
       8: 2.306, 9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t95(df):
    keys = [k for k in sorted(T95) if k <= df]
    return T95[keys[-1]] if keys else float("nan")


def mean_ci(xs):
    """Mean and 95% confidence half-width of xs (paired ratios)."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, float("nan")
    return m, t95(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))


def perftest_ceiling(run):
    """MB/s of ib_write_bw and ib_send_bw on the bench's rxe device. Under
    TCG perftest's own bandwidth columns read 0 (its cycle-counter clock is
    not usable there), so bandwidth is computed from the bytes and
    iterations it reports over the run's duration (SECONDS, from args)."""
    args = (run / "args").read_text().split()
    secs = float(args[1]) if len(args) > 1 else float("nan")
    out = {}
    for t in ("write", "send"):
        f = run / f"perftest-{t}.txt"
        if not f.exists():
            continue
        for line in f.read_text().splitlines():
            w = line.split()
            if len(w) >= 2 and w[0].isdigit() and w[1].isdigit():
                out[f"ib_{t}_bw"] = round(int(w[0]) * int(w[1]) / secs / 1e6, 2)
    return out


def main(run):
    rows = [json.loads(line) for line in (run / "bench.jsonl").read_text().splitlines() if line]
    ceiling = perftest_ceiling(run)
    by = defaultdict(dict)  # (job) -> {(round, flavour): row}
    for r in rows:
        if r["flavour"] in ("c", "rust") and r["value"] is not None:
            by[r["job"]][(r["round"], r["flavour"])] = r
    results = []
    for job, m in by.items():
        rounds = sorted({k[0] for k in m if (k[0], "c") in m and (k[0], "rust") in m})
        if not rounds:
            continue
        ratios = [m[(n, "rust")]["value"] / m[(n, "c")]["value"] for n in rounds]
        cpu = {}
        for f in ("c", "rust"):
            per_op = [m[(n, f)]["cpu_s"] / m[(n, f)]["ops"] for n in rounds
                      if m[(n, f)]["ops"]]
            cpu[f] = statistics.fmean(per_op) if per_op else None
        mean, half = mean_ci(ratios)
        c_vals = [m[(n, "c")]["value"] for n in rounds]
        rs_vals = [m[(n, "rust")]["value"] for n in rounds]
        unit = m[(rounds[0], "c")]["unit"]
        frac = None
        if unit == "MiBps" and ceiling.get("ib_write_bw"):
            frac = statistics.fmean(rs_vals) * 1.048576 / ceiling["ib_write_bw"]
        results.append({
            "job": job, "unit": unit, "rounds": len(rounds),
            "c_mean": statistics.fmean(c_vals), "rust_mean": statistics.fmean(rs_vals),
            "ratio_mean": mean, "ratio_ci95": [mean - half, mean + half],
            "cpu_ms_per_op_c": cpu["c"] and cpu["c"] * 1e3,
            "cpu_ms_per_op_rust": cpu["rust"] and cpu["rust"] * 1e3,
            "rust_fraction_of_ib_write_bw": frac,
        })
    out = {"ceiling_MBps": ceiling, "jobs": results,
           "topology": "one VM (client and server share 2 vCPUs), soft-RoCE, NFSv3",
           "cpu_note": "busy CPU time of the whole VM (client and server) per operation"}
    (run / "results.json").write_text(json.dumps(out, indent=2) + "\n")

    lines = ["| job | unit | C | Rust | Rust/C | 95% CI | VM CPU ms/op C | VM CPU ms/op Rust |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lo, hi = r["ratio_ci95"]
        lines.append(
            f"| {r['job']} | {r['unit']} | {r['c_mean']:.1f} | {r['rust_mean']:.1f} | "
            f"{r['ratio_mean']:.3f} | {lo:.3f}-{hi:.3f} | "
            f"{r['cpu_ms_per_op_c'] or float('nan'):.3f} | {r['cpu_ms_per_op_rust'] or float('nan'):.3f} |")
    lines.append("")
    lines.append("Ceiling (perftest on the same rxe device): " + ", ".join(
        f"{k} {v} MB/s" for k, v in ceiling.items()))
    lines.append(f"Rounds: {max((r['rounds'] for r in results), default=0)} per flavour, "
                 "alternating C and Rust in one boot; " + out["topology"] + ".")
    (run / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no plot)")
        return
    fig, ax = plt.subplots(figsize=(8, 4))
    names = [r["job"] for r in results]
    means = [r["ratio_mean"] for r in results]
    errs = [(r["ratio_ci95"][1] - r["ratio_ci95"][0]) / 2 for r in results]
    ax.bar(names, means, yerr=errs, capsize=4, color="#4c72b0")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_ylabel("Rust / C (mean of paired rounds, 95% CI)")
    ax.set_title("RPC-over-RDMA Send path: Rust vs C")
    fig.tight_layout()
    fig.savefig(run / "ratios.png", dpi=100)
    print(f"plot: {run / 'ratios.png'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
