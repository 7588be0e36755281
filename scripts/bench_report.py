#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""bench_report.py RUN_DIR: turn the benchmark client's bench.jsonl into
results.json, table.md (Rust/C ratios with 95% confidence intervals from
the paired rounds, the server's CPU per operation and per MiB, the
fraction of the perftest ceiling) and, where matplotlib is installed,
ratios.png (per-job ratio bars with their intervals, throughput and server
CPU)."""

import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

# Two-sided 95% Student t quantiles by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365,
       8: 2.306, 9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}
JOB_ORDER = ["randread4k", "randwrite4k", "seqread1m", "seqwrite1m", "meta_stat_open", "readdir"]


def t95(df):
    keys = [k for k in sorted(T95) if k <= df]
    return T95[keys[-1]] if keys else float("nan")


def mean_ci(xs):
    """Mean and 95% confidence interval of xs (one ratio per round)."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, [float("nan"), float("nan")]
    h = t95(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return m, [m - h, m + h]


def cpu_cost(row):
    """Server CPU seconds per unit of work: per MiB for throughput jobs,
    per operation otherwise; None when the job did no work."""
    work = row["mib"] if row["unit"] == "MiBps" else row["ops"]
    return row["srv_cpu_s"] / work if work else None


def fmt(x, spec):
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def analyse(rows):
    ceiling = {r["job"]: r["value"] for r in rows if r["flavour"] == "ceiling"}
    by = defaultdict(dict)  # (vers, job) -> {(round, flavour): row}
    for r in rows:
        if r["flavour"] in ("c", "rust") and r["value"] is not None:
            by[(r["vers"], r["job"])][(r["round"], r["flavour"])] = r
    results = []
    for (vers, job) in sorted(by, key=lambda k: (k[0], JOB_ORDER.index(k[1]) if k[1] in JOB_ORDER else 99)):
        m = by[(vers, job)]
        rounds = sorted({n for (n, _) in m if (n, "c") in m and (n, "rust") in m})
        if not rounds:
            continue
        unit = m[(rounds[0], "c")]["unit"]
        ratio, ratio_ci = mean_ci([m[(n, "rust")]["value"] / m[(n, "c")]["value"] for n in rounds])
        cost = {f: [cpu_cost(m[(n, f)]) for n in rounds] for f in ("c", "rust")}
        pairs = [(c, r) for c, r in zip(cost["c"], cost["rust"]) if c and r]
        cpu_ratio, cpu_ci = mean_ci([r / c for c, r in pairs]) if pairs else (None, [None, None])
        rust_mean = statistics.fmean(m[(n, "rust")]["value"] for n in rounds)
        frac = None
        if unit == "MiBps" and ceiling.get("ib_write_bw"):
            frac = rust_mean * 1.048576 / ceiling["ib_write_bw"]
        cpu_scale = 1e3 if unit == "MiBps" else 1e6  # ms per MiB, us per op
        results.append({
            "nfs": vers, "job": job, "unit": unit, "rounds": len(rounds),
            "c_mean": statistics.fmean(m[(n, "c")]["value"] for n in rounds),
            "rust_mean": rust_mean,
            "ratio_mean": ratio, "ratio_ci95": ratio_ci,
            "server_cpu_unit": "ms/MiB" if unit == "MiBps" else "us/op",
            "server_cpu_c": statistics.fmean(x for x, _ in pairs) * cpu_scale if pairs else None,
            "server_cpu_rust": statistics.fmean(y for _, y in pairs) * cpu_scale if pairs else None,
            "server_cpu_ratio_mean": cpu_ratio, "server_cpu_ratio_ci95": cpu_ci,
            "rust_fraction_of_ib_write_bw": frac,
        })
    return ceiling, results


def table(results, ceiling, topology):
    lines = ["| NFS | job | unit | C | Rust | Rust/C | 95% CI | server CPU C | server CPU Rust | CPU Rust/C (95% CI) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lo, hi = r["ratio_ci95"]
        clo, chi = r["server_cpu_ratio_ci95"]
        lines.append(
            f"| v{r['nfs']} | {r['job']} | {r['unit']} | {r['c_mean']:.1f} | {r['rust_mean']:.1f} | "
            f"{r['ratio_mean']:.3f} | {fmt(lo, '.3f')}-{fmt(hi, '.3f')} | "
            f"{fmt(r['server_cpu_c'], '.1f')} {r['server_cpu_unit']} | "
            f"{fmt(r['server_cpu_rust'], '.1f')} {r['server_cpu_unit']} | "
            f"{fmt(r['server_cpu_ratio_mean'], '.3f')} ({fmt(clo, '.3f')}-{fmt(chi, '.3f')}) |")
    lines.append("")
    lines.append("Ceiling (perftest between the same two rxe devices, 400 x 1 MiB timed): " + ", ".join(
        f"{k} {v} MB/s" for k, v in ceiling.items()))
    fr = [f"v{r['nfs']} {r['job']} {r['rust_fraction_of_ib_write_bw']:.2f}" for r in results
          if r["rust_fraction_of_ib_write_bw"] is not None]
    if fr:
        lines.append("Rust throughput as a fraction of ib_write_bw: " + ", ".join(fr) + ".")
    n = max((r["rounds"] for r in results), default=0)
    lines.append(f"Rounds: {n} per flavour, C and Rust alternating in one boot of each VM. Topology: {topology}.")
    return "\n".join(lines) + "\n"


def profile(run):
    """Send-path self time per operation from the perf profiles (one pass
    per flavour and job): samples in the flavour's own Send-path functions
    over the sampling rate, per operation of the job."""
    f = run / "profile.jsonl"
    if not f.exists():
        return []
    rows = [json.loads(line) for line in f.read_text().splitlines() if line]
    out = []
    for job in sorted({r["job"] for r in rows}):
        by = {r["flavour"]: r for r in rows if r["job"] == job}
        entry = {"job": job}
        for fl, r in by.items():
            entry[f"sendpath_us_per_op_{fl}"] = (r["sendpath_samples"] / r["hz"] / r["ops"] * 1e6
                                                  if r["ops"] else None)
            entry[f"sendpath_share_{fl}"] = r["sendpath_samples"] / r["samples"] if r["samples"] else None
        c, rs = entry.get("sendpath_us_per_op_c"), entry.get("sendpath_us_per_op_rust")
        entry["ratio"] = rs / c if c and rs is not None else None
        out.append(entry)
    return out


def profile_table(prof):
    if not prof:
        return ""
    lines = ["", "Server profile (perf cpu-clock, one NFSv3 pass per flavour; self time in the "
             "flavour's own Send-path functions, callees such as ib_post_send or memcpy not included):", "",
             "| job | Send path us/op C | Send path us/op Rust | Rust/C | share of server samples C | Rust |",
             "|---|---|---|---|---|---|"]
    for e in prof:
        lines.append(
            f"| {e['job']} | {fmt(e.get('sendpath_us_per_op_c'), '.1f')} | "
            f"{fmt(e.get('sendpath_us_per_op_rust'), '.1f')} | {fmt(e['ratio'], '.2f')} | "
            f"{fmt(e.get('sendpath_share_c') and e['sendpath_share_c'] * 100, '.2f')}% | "
            f"{fmt(e.get('sendpath_share_rust') and e['sendpath_share_rust'] * 100, '.2f')}% |")
    return "\n".join(lines) + "\n"


def plot(run, results):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no plot)")
        return
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=False)
    for ax, key, ci, title in (
            (axes[0], "ratio_mean", "ratio_ci95", "throughput, Rust / C"),
            (axes[1], "server_cpu_ratio_mean", "server_cpu_ratio_ci95", "server CPU per op or MiB, Rust / C")):
        jobs = [j for j in JOB_ORDER if any(r["job"] == j for r in results)]
        for k, vers in enumerate(sorted({r["nfs"] for r in results})):
            xs, ys, lo, hi = [], [], [], []
            for i, j in enumerate(jobs):
                r = next((r for r in results if r["job"] == j and r["nfs"] == vers), None)
                if r is None or r[key] is None:
                    continue
                xs.append(i + (k - 0.5) * 0.38)
                ys.append(r[key])
                a, b = r[ci]
                lo.append(0 if a is None or math.isnan(a) else r[key] - a)
                hi.append(0 if b is None or math.isnan(b) else b - r[key])
            ax.bar(xs, ys, width=0.38, yerr=[lo, hi], capsize=3, label=f"NFSv{vers}")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(jobs)))
        ax.set_xticklabels(jobs, rotation=30, ha="right")
        ax.set_title(title)
        ax.set_ylabel("mean of paired rounds, 95% CI")
        ax.legend()
    fig.suptitle("RPC-over-RDMA Send path: Rust vs C (higher is better left, lower is better right)")
    fig.tight_layout()
    fig.savefig(run / "ratios.png", dpi=100)
    print(f"plot: {run / 'ratios.png'}")


def main(run):
    rows = [json.loads(line) for line in (run / "bench.jsonl").read_text().splitlines() if line]
    topo_file = run / "topology"
    topology = topo_file.read_text().strip() if topo_file.exists() else "unknown"
    ceiling, results = analyse(rows)
    prof = profile(run)
    out = {"topology": topology, "ceiling_MBps": ceiling, "jobs": results, "profile": prof,
           "cpu_note": "server VM busy time (user+nice+system+irq+softirq) around each job"}
    (run / "results.json").write_text(json.dumps(out, indent=2) + "\n")
    text = table(results, ceiling, topology) + profile_table(prof)
    (run / "table.md").write_text(text)
    print(text, end="")
    plot(run, results)
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
