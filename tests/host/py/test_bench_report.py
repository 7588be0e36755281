#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tests of scripts/bench_report.py on made-up measurements whose ratios,
intervals and CPU costs are known."""

import json
import os
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../scripts"))
import bench_report  # noqa: E402


def row(rnd, flavour, vers, job, value, unit, cpu, ops, mib):
    return {"round": rnd, "flavour": flavour, "vers": vers, "job": job, "value": value,
            "unit": unit, "srv_cpu_s": cpu, "ops": ops, "mib": mib}


class BenchReport(unittest.TestCase):
    def rows(self):
        rows = [row(0, "ceiling", "-", "ib_write_bw", 200.0, "MBps", None, None, None)]
        # Rust/C = 0.9, 1.0, 1.1 over three rounds: mean 1.0, sd 0.1,
        # half-width t(2) * 0.1 / sqrt(3) = 4.303 * 0.057735 = 0.24844.
        for n, rust in ((1, 90.0), (2, 100.0), (3, 110.0)):
            rows.append(row(n, "c", "3", "seqread1m", 100.0, "MiBps", 2.0, 500, 500.0))
            # Rust used 1.5 s for 500 MiB: 3 ms/MiB against C's 4 ms/MiB.
            rows.append(row(n, "rust", "3", "seqread1m", rust, "MiBps", 1.5, 500, 500.0))
            rows.append(row(n, "c", "4.1", "randread4k", 1000.0, "IOPS", 1.0, 10000, 39.0))
            rows.append(row(n, "rust", "4.1", "randread4k", 1000.0, "IOPS", 1.0, 10000, 39.0))
        # A round where rust did not run is not paired.
        rows.append(row(4, "c", "3", "seqread1m", 50.0, "MiBps", 2.0, 500, 500.0))
        return rows

    def test_ratios_intervals_cpu(self):
        ceiling, results = bench_report.analyse(self.rows())
        self.assertEqual(ceiling, {"ib_write_bw": 200.0})
        self.assertEqual([(r["nfs"], r["job"]) for r in results], [("3", "seqread1m"), ("4.1", "randread4k")])
        seq = results[0]
        self.assertEqual(seq["rounds"], 3)
        self.assertAlmostEqual(seq["ratio_mean"], 1.0)
        self.assertAlmostEqual(seq["ratio_ci95"][0], 1.0 - 0.24844, places=4)
        self.assertAlmostEqual(seq["ratio_ci95"][1], 1.0 + 0.24844, places=4)
        self.assertAlmostEqual(seq["c_mean"], 100.0)
        self.assertEqual(seq["server_cpu_unit"], "ms/MiB")
        self.assertAlmostEqual(seq["server_cpu_c"], 4.0)
        self.assertAlmostEqual(seq["server_cpu_rust"], 3.0)
        self.assertAlmostEqual(seq["server_cpu_ratio_mean"], 0.75)
        self.assertAlmostEqual(seq["rust_fraction_of_ib_write_bw"], 100.0 * 1.048576 / 200.0)
        rnd = results[1]
        self.assertEqual(rnd["server_cpu_unit"], "us/op")
        self.assertAlmostEqual(rnd["server_cpu_c"], 100.0)
        self.assertAlmostEqual(rnd["ratio_ci95"][0], 1.0)
        self.assertIsNone(rnd["rust_fraction_of_ib_write_bw"])

    def test_outputs(self):
        with tempfile.TemporaryDirectory() as d:
            run = Path(d)
            (run / "bench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in self.rows()))
            (run / "topology").write_text("two VMs\n")
            self.assertEqual(bench_report.main(run), 0)
            table = (run / "table.md").read_text()
            self.assertIn("| v3 | seqread1m | MiBps | 100.0 | 100.0 | 1.000 | 0.752-1.248 |", table)
            self.assertIn("Topology: two VMs.", table)
            out = json.loads((run / "results.json").read_text())
            self.assertEqual(len(out["jobs"]), 2)

    def test_profile(self):
        with tempfile.TemporaryDirectory() as d:
            run = Path(d)
            # 50 Send-path samples at 500 Hz over 1000 ops: 100 us per op.
            rows = [{"flavour": "c", "job": "randread4k", "samples": 4000, "sendpath_samples": 50,
                     "hz": 500, "ops": 1000},
                    {"flavour": "rust", "job": "randread4k", "samples": 4000, "sendpath_samples": 40,
                     "hz": 500, "ops": 1000}]
            (run / "profile.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            (prof,) = bench_report.profile(run)
            self.assertAlmostEqual(prof["sendpath_us_per_op_c"], 100.0)
            self.assertAlmostEqual(prof["sendpath_us_per_op_rust"], 80.0)
            self.assertAlmostEqual(prof["ratio"], 0.8)
            self.assertAlmostEqual(prof["sendpath_share_c"], 50 / 4000)
            self.assertIn("| randread4k | 100.0 | 80.0 | 0.80 | 1.25% | 1.00% |",
                          bench_report.profile_table([prof]))


if __name__ == "__main__":
    unittest.main()
