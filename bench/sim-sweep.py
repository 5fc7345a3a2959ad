#!/usr/bin/env python3
"""Property sweep in the simulator: random 2-4 link mixes, one `braid sim` bulk run each.

Issue 14 asks EDPF's steady-state reorder to stay <= 10 packets on every 2-4 link mix of
20 kbit/s-100 Mbit/s and 5-150 ms; this prints, per mix, the steady-state reorder maximum, the
same outside loss recovery (a lost packet's gap holds a round trip of arrivals whatever the
scheduler does), that hold also as milliseconds at the mix's summed link rate (10 packets are
0.6 ms on two 100 Mbit/s paths and 2.9 s on two 20 kbit/s ones), and the efficiency (goodput /
sum of link rates) for each scheduler given, worst first, and how many mixes meet the bound.
Last per scheduler: the mean of the buffer outside loss recovery (sampled every 10 ms), which
tells a schedule that is steadily off (a buffer that never empties) from one spike.

Usage: python3 bench/sim-sweep.py [--mixes N] [--seed S] [--duration 30s] [--schedulers edpf,minrtt]
                                  [--congestion bbr|bbr-shared|cubic|newreno] [--shared-bottleneck]
--congestion sets every path's controller (default: braid sim's, bbr); bbr-shared is what a
server with several busy sessions sends downloads with, and a client whose server says other
uploads arrive too: ProbeRTT drains to half a BDP, but only with --shared-bottleneck (the
sender is told others share its bottleneck); without it bbr-shared drains as bbr.
Needs target/release/braid (cargo build --release -p braid), or BRAID=path.
"""
import argparse
import json
import os
import random
import subprocess

RATES = ["20kbit", "50kbit", "200kbit", "1mbit", "5mbit", "20mbit", "100mbit"]
DELAYS_MS = [5, 20, 50, 150]
BOUND = 10


def run(braid, links, scheduler, duration, seed, congestion, shared):
    args = [braid, "sim", "--scheduler", scheduler, "--duration", duration, "--seed", str(seed), "--json"]
    if congestion:
        args += ["--congestion", congestion]
    if shared:
        args += ["--shared-bottleneck"]
    for link in links:
        args += ["--link", link]
    out = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"braid sim failed ({' '.join(args)}): {out.stderr.strip()[:300]}")
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mixes", type=int, default=30)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--duration", default="30s")
    ap.add_argument("--schedulers", default="edpf,minrtt")
    ap.add_argument("--congestion", default=None, choices=["bbr", "bbr-shared", "cubic", "newreno"])
    ap.add_argument("--shared-bottleneck", action="store_true")
    a = ap.parse_args()
    braid = os.environ.get("BRAID", os.path.join(os.path.dirname(__file__), "..", "target", "release", "braid"))
    rng = random.Random(a.seed)
    schedulers = a.schedulers.split(",")
    rows = []
    for i in range(a.mixes):
        links = [f"{rng.choice(RATES)}/{rng.choice(DELAYS_MS)}ms" for _ in range(rng.choice([2, 3, 4]))]
        cells = []
        for s in schedulers:
            d = run(braid, links, s, a.duration, i + 1, a.congestion, a.shared_bottleneck)
            lossfree = d["reorder_max_lossfree_packets"]
            # The hold as time: what the receiver holds, at the mix's summed link rate.
            # (The largest path MTU: a path closed by the end reports 0.)
            hold_ms = lossfree * max(p["mtu"] for p in d["paths"]) * 8 / d["capacity_bps"] * 1e3
            mean = d["reorder_mean_lossfree_packets"]
            cells.append((d["reorder_max_steady_packets"], d["efficiency"], d["intact"], lossfree, hold_ms, mean))
        rows.append((links, cells))
    rows.sort(key=lambda r: -r[1][0][0])
    head = " | ".join(
        f"{s} reorder | {s} outside loss recovery | {s} same, ms at the summed rate | {s} efficiency | {s} mean there"
        for s in schedulers
    )
    print(f"| mix | {head} |")
    print("|" + " --- |" * (1 + 5 * len(schedulers)))
    for links, cells in rows:
        c = " | ".join(
            f"{r} | {lf} | {ms:.1f} | {e:.3f}{'' if ok else ' NOT INTACT'} | {mean:.1f}" for r, e, ok, lf, ms, mean in cells
        )
        print(f"| {' '.join(links)} | {c} |")
    for k, s in enumerate(schedulers):
        within = sum(1 for _, cells in rows if cells[k][0] <= BOUND)
        weak = sum(1 for _, cells in rows if cells[k][1] < 0.8)
        clean = sum(1 for _, cells in rows if cells[k][3] <= BOUND)
        holds_ms = sorted(cells[k][4] for _, cells in rows)
        means = sum(cells[k][5] for _, cells in rows)
        print(
            f"{s} ({a.congestion or 'bbr'}{', shared' if a.shared_bottleneck else ''}): steady reorder <= {BOUND} on {within} of {len(rows)} mixes "
            f"({clean} outside loss recovery); efficiency < 0.8 on {weak}; "
            f"hold outside loss recovery, ms at the summed rate: median {holds_ms[len(holds_ms) // 2]:.1f}, "
            f"within 10 ms on {sum(1 for h in holds_ms if h <= 10.0)}; mean held there, summed over the mixes: {means:.1f}"
        )


if __name__ == "__main__":
    main()
