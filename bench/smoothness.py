#!/usr/bin/env python3
"""Smoothness of delivery from a `braid lab run` report: for every run, the share of its
100 ms receiver intervals whose goodput is below half the run's mean (stalls behind a slow
path), after the first second (slow start). Issue 11's target: at most 1 % with the default
scheduler, both directions, on lab/three.toml and lab/lossy.toml.

    sudo braid lab run lab/three.toml --contenders braid --repeats 3 --out target/lab-three
    python3 bench/smoothness.py target/lab-three/results.json [--json]
"""

import json
import sys
from collections import defaultdict

WARMUP_S = 1.0


def stalls(series):
    """Share of intervals after WARMUP_S below half the mean of those intervals."""
    xs = [s["bps"] for s in series if s["start"] >= WARMUP_S and s["end"] - s["start"] > 0.05]
    if not xs:
        return None, 0
    mean = sum(xs) / len(xs)
    below = sum(1 for x in xs if x < mean / 2)
    return below / len(xs), len(xs)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    report = json.load(open(sys.argv[1]))
    rows = defaultdict(list)
    for run in report["runs"]:
        if run.get("status") != "ok" or not run.get("series"):
            continue
        share, n = stalls(run["series"])
        if share is not None:
            rows[(run["workload"], run["contender"])].append((share, n, run.get("goodput_bps") or 0))
    out = []
    for (workload, contender), runs in sorted(rows.items()):
        shares = sorted(r[0] for r in runs)
        median = shares[len(shares) // 2]
        out.append({
            "workload": workload,
            "contender": contender,
            "runs": len(runs),
            "stall_share_median": median,
            "stall_share_max": shares[-1],
            "intervals_per_run": runs[0][1],
            "goodput_mbps_median": sorted(r[2] for r in runs)[len(runs) // 2] / 1e6,
        })
    if "--json" in sys.argv:
        print(json.dumps(out, indent=2))
        return
    print(f"{'workload':<14} {'contender':<18} {'runs':>4} {'<half mean (median)':>20} {'(max)':>7} {'Mbit/s':>8}")
    for r in out:
        print(f"{r['workload']:<14} {r['contender']:<18} {r['runs']:>4} {r['stall_share_median']*100:>19.1f}% "
              f"{r['stall_share_max']*100:>6.1f}% {r['goodput_mbps_median']:>8.2f}")


if __name__ == "__main__":
    main()
