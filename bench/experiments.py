#!/usr/bin/env python3
"""Regenerates docs/experiments.md: the papers' reference experiments run with `braid sim`.

    python3 bench/experiments.py            # builds braid (release), runs everything, writes the file
    python3 bench/experiments.py --no-build --out /tmp/experiments.md

Every figure in the generated file comes from a `braid sim ... --json` run whose exact command
is printed next to it; the text around the tables (the papers' setups and figures, and how
braid's setup differs) is written here. Runs are deterministic: the same binary gives the same
file. Python 3.8+, standard library only.
"""

import argparse
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "braid")

# ---------------------------------------------------------------------------------------------
# Runs


class Run:
    """One `braid sim` invocation."""

    def __init__(self, args):
        self.args = args
        self.result = None

    def command(self):
        return "braid sim " + " ".join(shlex.quote(a) for a in self.args)

    def execute(self):
        out = subprocess.run([BIN, "sim", *self.args, "--json"], capture_output=True, text=True)
        if out.returncode not in (0, 1):
            raise RuntimeError(f"{self.command()} failed:\n{out.stderr}")
        self.result = json.loads(out.stdout)
        return self


RUNS = {}


def run(*args):
    """The run for these arguments (created once, executed later)."""
    key = tuple(args)
    if key not in RUNS:
        RUNS[key] = Run(list(args))
    return RUNS[key]


def links(*specs):
    out = []
    for s in specs:
        out += ["--link", s]
    return out


# ---------------------------------------------------------------------------------------------
# Formatting helpers


def pct(x):
    return f"{x:.2f}"


def mbit(bps):
    return f"{bps / 1e6:.2f}"


def kbit(bps):
    return f"{bps / 1e3:.0f}"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def commands(runs):
    lines = ["Commands:", "", "```sh"]
    seen = set()
    for r in runs:
        c = r.command()
        if c not in seen:
            seen.add(c)
            lines.append(c)
    lines.append("```")
    return "\n".join(lines)


def phase_means(result, bounds_s):
    """Mean goodput (bit/s) of the timeline within each [a, b) of `bounds_s`."""
    out = []
    for a, b in bounds_s:
        pts = [p["goodput_bps"] for p in result["timeline"] if a * 1000 <= p["t_ms"] < b * 1000]
        out.append(sum(pts) / len(pts) if pts else 0.0)
    return out


# ---------------------------------------------------------------------------------------------
# Experiments: each returns (markdown, runs)

SEED000_T3_LINKS = links(*[f"{r}kbit/0ms/queue=50p" for r in (128, 64, 32, 16)])
SEED000_T3 = ["--workload", "cbr:256kbit", "--deadline", "1s", "--duration", "120s"]


def seed000_table3():
    variants = [
        ("Random", ["--scheduler", "random"]),
        ("RR", ["--scheduler", "rr"]),
        ("WRR", ["--scheduler", "wrr", "--weights", "8,4,2,1"]),
        ("wrr (auto weights)", ["--scheduler", "wrr"]),
        ("minrtt", ["--scheduler", "minrtt"]),
        ("edpf", ["--scheduler", "edpf"]),
    ]
    runs = [(name, run(*SEED000_T3_LINKS, *v, *SEED000_T3)) for name, v in variants]

    def body():
        paper = {
            "Random": ([0, 6.93, 53.67, 77.15], 34.18, 7.24),
            "RR": ([0, 7.9, 53.95, 76.97], 34.4, 2.45),
            "WRR": ([14.1, 13.75, 13.06, 11.54], 13.25, 13.25),
        }
        rows = []
        for name, r in runs:
            res = r.result
            per_link = [pct(p["datagram_loss_pct"]) for p in res["paths"]]
            c = res["classes"][0]
            p = paper.get(name)
            rows.append(
                [f"**{name}**", *per_link, pct(c["loss_pct"]), f"{c['jitter_ms']:.0f}", f"{c['latency_mean_ms']:.0f}"]
            )
            if p:
                rows.append([f"{name} (paper)", *[pct(x) for x in p[0]], pct(p[1]), pct(p[2]), "—"])
        return table(
            ["scheduler", "link 1 (128 kb/s)", "link 2 (64)", "link 3 (32)", "link 4 (16)", "total", "jitter ms",
             "latency ms"],
            rows,
        )

    def text():
        return f"""## Seed 000, Tables III–IV: CBR over four unequal links

**Paper setup.** ns-2; a 256 kb/s CBR flow striped over four WAN links of 128, 64, 32 and
16 kb/s (240 kb/s in all, so at least 6.25 % must be lost); no congestion control — losses
happen in the links' drop-tail queues. Random and RR "allocate an equal number of packets to
each channel"; WRR (surplus round-robin) stripes in proportion to bandwidth.

**braid setup.** The same four links, zero propagation delay, 50-packet drop-tail queues
(the digest's A4 reading), 1000-byte datagrams, 120 s. The paper's WRR knows the links' rates;
braid's `--weights 8,4,2,1` is that. Every path runs braid's congestion control and pacing,
so a datagram a striping scheduler assigns to a busy path waits in that path's queue at the
sender instead of in the link's queue, and is dropped there when its 1 s deadline passes (see
"Datagrams under congestion control" below): per-link loss is datagrams assigned to the path
minus datagrams that arrived on it.

{body()}

{commands([r for _, r in runs])}

**Differences.** The loss figures follow the paper's shape — Random and RR near the fluid
model's 0/0/50/75 % per link, WRR spread evenly around the 6.25 % minimum plus overhead.
Jitter and latency do not: braid delivers what a path's window lets through, so a datagram
that waited at the sender or in a slow link's short queue arrives up to seconds late
(16 kb/s carries one 1070-byte packet every 0.53 s, and every path keeps at least four packets
in flight), and RFC 3550 jitter over a flow striped across paths with such different delays
runs to seconds; the paper's jitter of a few milliseconds (and its WRR jitter printed
equal to its WRR loss, 13.25) cannot be compared. The extra rows show braid's own schedulers:
weights from measured capacity, and the work-conserving min-RTT and EDPF.
"""

    return text, [r for _, r in runs]


def seed000_lps():
    order = [5, 9, 2, 7, 1, 10, 4, 8, 3, 6]
    t5_links = links(*[f"20kbit/10ms/loss={p}%" for p in order])
    t5 = ["--workload", "cbr:30kbit", "--deadline", "2s", "--duration", "300s"]
    t5_variants = [
        ("Random", ["--scheduler", "random"]),
        ("RR", ["--scheduler", "rr"]),
        ("WRR", ["--scheduler", "wrr", "--weights", ",".join(["1"] * 10)]),
        ("LPS", ["--scheduler", "lps"]),
    ]
    t5_runs = [(n, run(*t5_links, *v, *t5)) for n, v in t5_variants]
    layered = ["--workload", "layered:15kbit,15kbit,15kbit", "--deadline", "2s", "--duration", "300s"]
    t6_links = links("20kbit/10ms/loss=10%", "20kbit/10ms/loss=1%", "20kbit/10ms/loss=5%")
    t7_links = links("20kbit/10ms/loss=5%", "20kbit/10ms/loss=1%")

    def variants(n):
        return [
            ("Random", ["--scheduler", "random"]),
            ("RR", ["--scheduler", "rr"]),
            ("WRR", ["--scheduler", "wrr", "--weights", ",".join(["1"] * n)]),
            ("LPS", ["--scheduler", "lps"]),
            ("fps", ["--scheduler", "fps"]),
            ("ips", ["--scheduler", "ips"]),
        ]

    t6_runs = [(n, run(*t6_links, *v, *layered)) for n, v in variants(3)]
    t7_runs = [(n, run(*t7_links, *v, *layered)) for n, v in variants(2)]
    paper5 = {"Random": 5.56, "RR": 5.58, "WRR": 5.68, "LPS": 1.41}
    paper6 = {
        "Random": [5.07, 5.28, 5.53],
        "RR": [9.97, 1.02, 4.81],
        "WRR": [6.05, 4.89, 5.16],
        "LPS": [1, 4.96, 9.72],
    }
    paper7 = {
        "Random": [18.99, 19.64, 19.89],
        "RR": [23.57, 12.44, 22.4],
        "WRR": [18.76, 20.53, 19.25],
        "LPS": [0.96, 5.15, 100],
    }

    def t5_table():
        rows = [[n, pct(r.result["classes"][0]["loss_pct"]), pct(paper5[n])] for n, r in t5_runs]
        return table(["scheduler", "braid loss %", "paper loss %"], rows)

    def layer_table(runs, paper):
        rows = []
        for n, r in runs:
            layers = [pct(c["loss_pct"]) for c in r.result["classes"]]
            p = paper.get(n)
            rows.append([n, *[f"{b} ({pct(x)})" if p else b for b, x in zip(layers, p or [0] * 3)]])
        return table(["scheduler", "ℓ0 braid (paper)", "ℓ1 braid (paper)", "ℓ2 braid (paper)"], rows)

    def text():
        return f"""## Seed 000, Tables V–VII: agnostic striping against LPS

**Paper setup.** ns-2. Table V: 30 kb/s CBR over ten 20 kb/s channels, channel i losing i %
— the agnostic schemes use all ten (mean 5.5 %), LPS the 1 % and 2 % channels. Table VI: a
video of three cumulative 15 kb/s layers over three 20 kb/s links at 1, 5 and 10 % loss; LPS
maps ℓ0 → 1 %, ℓ1 → 5 %, ℓ2 → 10 %. Table VII: the same video over two links at 1 % and 5 %
(40 kb/s for 45 kb/s of layers); LPS "drops the layer ℓ2 entirely".

**braid setup.** The same links with 10 ms delay, 1000-byte datagrams (one traffic class per
layer, base layer most important), a 2 s deadline, 300 s. The links are listed so that
the most reliable one is not first (LPS must find it from measured loss; the paper's monitor
was ideal). The paper's WRR weights by bandwidth, which is equal here: `--weights 1,…`.

Table V — total loss:

{t5_table()}

Table VI — loss per layer, three links:

{layer_table(t6_runs, paper6)}

Table VII — loss per layer, two links (limited capacity):

{layer_table(t7_runs, paper7)}

{commands([r for _, r in t5_runs + t6_runs + t7_runs])}

**Differences.** braid ranks paths by the loss its monitor measured (packet outcomes, a few
per second on an idle 20 kb/s path), not by an oracle, and gives each path 90 % of its
measured capacity × (1 − loss), so its assignments can differ from the paper's for a while.
Where a layer does not fill a path, the paper's rule shares the rest of that path with the next
layer ("the remaining bandwidth of this channel is assigned to sf2"), which braid follows; the
paper's numbers for ℓ1/ℓ2 in Table VI are closer to one layer per link. The agnostic
schedulers do not lose all layers alike in Table VII as the paper's do: braid's sender always
takes datagrams in class priority order and, when they pile up, drops the least important
first, whatever the scheduler — so even Random and RR lose the top layer most. FPS and IPS
rows are braid's other priority-aware schedulers on the same traffic (not in the paper's
tables): FPS sizes a class by its peak rate (the busiest second of the last five: two packets
for a layer of 1.9 packets a second, which with the 10 % margin no longer fits), IPS keeps each
class on paths of its own and drops a class alone.
"""

    return text, [r for _, r in t5_runs + t6_runs + t7_runs]


def seed004_table3():
    lk = links("200kbit/15ms", "100kbit/50ms", "50kbit/50ms")
    variants = [
        ("WRR 4:2:1", ["--scheduler", "wrr", "--weights", "4,2,1"]),
        ("EDPF", ["--scheduler", "edpf"]),
        ("minrtt", ["--scheduler", "minrtt"]),
    ]
    runs = []
    for cc in ("newreno", "bbr"):
        for n, v in variants:
            runs.append((n, cc, run(*lk, *v, "--congestion", cc, "--duration", "40s")))

    def body():
        rows = []
        for n, cc, r in runs:
            res = r.result
            rows.append([
                n, cc, kbit(res["goodput_bps"]), f"{res['efficiency']:.3f}", res["reorder_max_packets"],
                res["reorder_max_steady_packets"], res["retransmitted_bytes"],
            ])
        rows.append(["EDPF (paper)", "NewReno", "329", "0.940", "3", "—", "0"])
        rows.append(["WRR (paper)", "NewReno", "265", "0.757", "≈100", "—", "96 packets"])
        return table(
            ["scheduler", "congestion", "goodput kb/s", "of 350 kb/s", "reorder max (packets)",
             "after warm-up", "retransmitted bytes"],
            rows,
        )

    def text():
        return f"""## Seed 004, Table III and Fig. 15: EDPF against WRR, reorder buffer

**Paper setup.** QualNet; three wireless paths of 200, 100 and 50 kb/s behind 10 Mb/s wired
hops with 15 ms and 50 ms delay; TCP NewReno, 1460-byte segments, 64 KB buffers, no loss, about
40 s. Table III (one TCP connection striped at the network layer): EDPF 329 kb/s with no
duplicate ACK, WRR (4:2:1) 265 kb/s with 522 duplicate ACKs and 96 retransmissions. Fig. 15
(middleware, one connection per path): at most 3 packets wait in the receiver's buffer with
EDPF, about 100 with WRR.

**braid setup.** Links `200kbit/15ms`, `100kbit/50ms`, `50kbit/50ms` (the digest's A17 reading
of Fig. 12), 40 s, with NewReno as in the paper and with BBR, braid's default. "Reorder max" is
the most packets the receiver held behind a gap during the run; "after warm-up" leaves out the
first 5 s.

{body()}

{commands([r for _, _, r in runs])}

**Differences.** braid is the paper's middleware model — congestion control per path, one
reorder buffer — so, as in its Fig. 15, WRR costs buffer rather than throughput: reordering
between paths never looks like loss to braid's per-path loss detection, and WRR's goodput
stays close to EDPF's instead of falling to the network-layer 265 kb/s of Table III. EDPF's
retransmissions stay at zero. EDPF's whole-run maximum includes the first seconds, when the
paths' rate estimates are still forming.
"""

    return text, [r for _, _, r in runs]


SEED002_PHASES = [(0, 10), (10, 30), (30, 50), (50, 70), (70, 90), (90, 110), (110, 120)]
SEED002_BG = [(0, 0), (5, 0), (2, 6), (8, 2), (0, 8), (6, 4), (0, 0)]


def seed002_fig7():
    cap0 = ",".join(f"{10 - b0}mbit@{a}s" for (a, _), (b0, _) in zip(SEED002_PHASES, SEED002_BG))
    cap1 = ",".join(f"{10 - b1}mbit@{a}s" for (a, _), (_, b1) in zip(SEED002_PHASES, SEED002_BG))
    lk = links(f"10mbit/10ms/capacity={cap0}", f"10mbit/10ms/capacity={cap1}")
    variants = [
        ("RR (TEQL)", ["--scheduler", "rr"]),
        ("WRR auto (NATALIE)", ["--scheduler", "wrr"]),
        ("minrtt", ["--scheduler", "minrtt"]),
        ("edpf", ["--scheduler", "edpf"]),
    ]
    runs = [(n, run(*lk, *v, "--duration", "120s")) for n, v in variants]

    def body():
        header = ["scheduler"] + [f"{a}–{b} s" for a, b in SEED002_PHASES] + ["mean"]
        ideal = [(20 - b0 - b1) for b0, b1 in SEED002_BG]
        rows = [["ideal (available)", *[f"{x:.2f}" for x in ideal],
                 f"{sum(x * (b - a) for x, (a, b) in zip(ideal, SEED002_PHASES)) / 120:.2f}"]]
        for n, r in runs:
            means = phase_means(r.result, SEED002_PHASES)
            rows.append([n, *[mbit(x) for x in means], mbit(r.result["goodput_bps"])])
        return table(header, rows)

    def second_halves():
        halves = [(a + (b - a) / 2, b) for a, b in SEED002_PHASES]
        rows = []
        for n, r in runs:
            rows.append([n, *[mbit(x) for x in phase_means(r.result, halves)]])
        return table(["scheduler"] + [f"{a:.0f}–{b} s" for a, b in halves], rows)

    def text():
        return f"""## Seed 002, Fig. 7: equal-weight round-robin against auto-weighted WRR

**Paper setup.** Emulab; two 10 Mb/s links whose available bandwidth changes every 20 s
between t = 10 s and 110 s because of background traffic; Linux TEQL (strict round-robin)
against NATALIE with weights computed from the measured available bandwidth. TEQL is
"frequently not close to the ideal" (the sum of available bandwidths); NATALIE is "very near
the maximum available bandwidth", with "occasional sharp downward spikes" at each change
lasting "several measurement intervals". The levels are only in the plot.

**braid setup.** The background levels are braid's choice (the digest's A8), in Mb/s on
link 0/link 1: {", ".join(f"[{a},{b}) {x}/{y}" for (a, b), (x, y) in zip(SEED002_PHASES, SEED002_BG))};
the links' capacity changes accordingly (`capacity=`), 10 ms delay each way, one bulk stream,
120 s. `rr` is strict round-robin like TEQL; `wrr` weights each path by its measured capacity
(delivery rate while saturated, packet pair while held back), re-weighted every second.

Goodput in Mb/s, mean over each phase:

{body()}

The second half of each phase, after the weights have settled:

{second_halves()}

{commands([r for _, r in runs])}

**Differences.** As in the paper, strict round-robin carries twice the smaller available
bandwidth, and auto-weighted WRR follows the sum after each change. braid's WRR settles more
slowly than NATALIE's "several measurement intervals": a path whose share was too small is
also paced by its own congestion controller, which must probe up to the new rate, and a path
held back by the scheduler is measured by packet pairs every 2 s. braid's default
schedulers (min-RTT, EDPF) need no weights and stay near the ideal throughout.
"""

    return text, [r for _, r in runs]


def seed003():
    slow = "420kbit/60ms"
    bo = "down=20s-22s,40s-42s,60s-62s,80s-82s"
    cases = [
        ("2 s blackouts every 20 s, Wi-Fi RTT 50 ms", f"11.6mbit/25ms/{bo}", "11.6mbit/25ms", 8),
        ("2 s blackouts every 20 s, Wi-Fi RTT 200 ms", f"11.6mbit/100ms/{bo}", "11.6mbit/100ms", 8),
        ("10 s blackouts at 20 s and 50 s, Wi-Fi RTT 50 ms", "11.6mbit/25ms/down=20s-30s,50s-60s", "11.6mbit/25ms",
         20),
    ]
    freeze_runs = []
    for label, fast, clean, down in cases:
        for cc in ("newreno", "bbr"):
            on = run(*links(fast, slow), "--congestion", cc, "--duration", "100s")
            off = run(*links(fast, slow), "--congestion", cc, "--no-blackout-freeze", "--duration", "100s")
            ideal = run(*links(clean, slow), "--congestion", cc, "--duration", "100s")
            freeze_runs.append((label, cc, on, off, ideal, down))
    loss_runs = []
    for loss in ("0.1", "1", "3"):
        for cc in ("newreno", "bbr"):
            off = run(*links(f"11.6mbit/25ms/loss={loss}%", slow), "--congestion", cc, "--duration", "100s")
            on = run(*links(f"11.6mbit/25ms/loss={loss}%", slow), "--congestion", cc, "--loss-discrimination",
                     "--duration", "100s")
            clean = run(*links("11.6mbit/25ms", slow), "--congestion", cc, "--duration", "100s")
            loss_runs.append((loss, cc, on, off, clean))

    def freeze_table():
        rows = []
        for label, cc, on, off, ideal, down in freeze_runs:
            g_on, g_off = on.result["goodput_bps"], off.result["goodput_bps"]
            p = on.result["paths"]
            fast_ideal = ideal.result["paths"][0]["goodput_bps"] * (100 - down) / 100
            avail = fast_ideal + ideal.result["paths"][1]["goodput_bps"]
            rows.append([label, cc, mbit(g_off), mbit(g_on), f"{100 * (g_on / g_off - 1):+.0f} %",
                         mbit(avail), f"{g_on / avail:.2f}", p[0]["blackouts"]])
        return table(["blackouts", "congestion", "no freeze Mb/s", "freeze Mb/s", "gain",
                      "ideal × availability", "freeze / ideal", "blackouts seen"], rows)

    def loss_table():
        rows = []
        for loss, cc, on, off, clean in loss_runs:
            g_on, g_off, g_c = on.result["goodput_bps"], off.result["goodput_bps"], clean.result["goodput_bps"]
            rows.append([f"{loss} %", cc, mbit(g_off), f"{g_off / g_c:.2f}", mbit(g_on), f"{g_on / g_c:.2f}",
                         f"{100 * (g_on / g_off - 1):+.0f} %"])
        return table(["Wi-Fi loss", "congestion", "without Mb/s", "of loss-free", "with Mb/s", "of loss-free",
                      "gain"], rows)

    def text():
        return f"""## Seed 003: blackout freeze and loss discrimination

**Paper setup.** A phone with Wi-Fi (primary, 11.6 Mb/s) and 3G (420 kb/s); a bulk TCP
download (user-space NewReno + SACK) for 100 s through a WAN emulator adding 50 ms RTT.
Blackouts of the Wi-Fi "every 20 seconds on average": freezing instead of collapsing gains
**+87 %**, close to ideal (no-blackout throughput × availability) across Wi-Fi RTTs, **+161 %
at 200 ms RTT**, **+136 % with 10 s blackouts**. Random loss on the Wi-Fi: default TCP keeps
less than 20 % of the achievable throughput at 1 % loss; loss fetching stays near loss-free
"until loss rate is more than 3%" (**+100 % at 0.1 %**, +175 % at 200 ms RTT).

**braid setup.** Links `11.6mbit/25ms` (Wi-Fi) and `420kbit/60ms` (3G), one bulk stream from
the client, 100 s; blackouts at 20, 40, 60, 80 s for 2 s (the digest's A15), or 10 s
blackouts at 20 and 50 s. Blackout freeze is on by default (`--no-blackout-freeze` turns it
off: the silent path's controller then collapses as after a TCP retransmission timeout); loss
discrimination is off by default (`--loss-discrimination`). Acks travel on the lowest-RTT path.

Blackout freeze (goodput over the whole run):

{freeze_table()}

Loss discrimination, random loss on the Wi-Fi path:

{loss_table()}

{commands([r for x in freeze_runs for r in x[2:5]] + [r for x in loss_runs for r in x[2:]])}

**Differences.** braid's gain from freezing is far smaller than the paper's at 50 ms: the
paper's default TCP also lost time to its retransmission-timeout backoff after each blackout,
whereas braid detects the silence within 200 ms, moves the data to the 3G path and probes the
Wi-Fi path at least every second whether or not it freezes — freezing only saves the
controller's ramp back up, which grows with the RTT (the 200 ms rows). braid does not fetch
losses over the second link as the paper's Fast Fetcher does: any lost frame is resent on
whichever path the scheduler picks anyway; what decides the loss figures is whether the
Wi-Fi path's controller reads random loss as congestion. With NewReno it does, unless loss
discrimination classes the loss as random (no queue, no rising RTT); BBR, braid's default,
does not cut its rate for random loss in the first place, so discrimination changes nothing
for it.
"""

    return text, [r for x in freeze_runs for r in x[2:5]] + [r for x in loss_runs for r in x[2:]]


def seed002_admission():
    mixes = [
        ("Case I: equal links, one at 5 % loss", ["10mbit/10ms", "10mbit/10ms/loss=5%"]),
        ("Case II: lossless fast + slow at 10 % loss", ["10mbit/10ms", "2mbit/10ms/loss=10%"]),
        ("lossy fast + lossier slow", ["20mbit/10ms/loss=1%", "5mbit/40ms/loss=8%"]),
    ]
    runs = []
    for label, m in mixes:
        for cc in ("newreno", "bbr"):
            off = run(*links(*m), "--congestion", cc, "--duration", "30s")
            on = run(*links(*m), "--congestion", cc, "--admission", "--duration", "30s")
            runs.append((label, cc, off, on))

    def body():
        rows = []
        for label, cc, off, on in runs:
            states = "/".join(p["monitor"] for p in on.result["paths"])
            rows.append([label, cc, mbit(off.result["goodput_bps"]), mbit(on.result["goodput_bps"]), states])
        return table(["links", "congestion", "all paths Mb/s", "with admission Mb/s", "paths with admission"], rows)

    def text():
        return f"""## Seed 002 (and seed 000's bound): path admission

**Paper.** NATALIE's rules (seed 002, end of §IV): weights proportional to bandwidth while the
links' impairments are similar; overweight the best link as the disparity grows; "avoid using
multiple links entirely" when it grows large (Case II: with the slow link at ≥ 10 % loss "it is
prudent to use only the lossless high bandwidth link"). Seed 000's appendix picks the group of
channels with the highest TCP throughput bound Σ C·B/(R·√p).

**braid.** `--admission` applies both (the thresholds of the digest's A9 and A11: a 4 % loss
disparity, 10 % on links of 1 Mbit/s or less; a path joins only if it raises the group's
bound), keeps a left-out path in standby, pings it and admits it again when its loss falls.
Bulk stream, 30 s:

{body()}

{commands([r for x in runs for r in x[2:]])}

**Differences.** The rules hold for what the papers measured — one loss-based TCP flow
striped over the links, whose single window every loss on any link cuts. braid runs a
congestion controller per path and resends a lost frame on whichever path is free, so a lossy
path only costs its own window and still adds its share: leaving it out lowers braid's
goodput in every case above. Admission is therefore off by default; it is there for sessions
whose traffic is itself such a striped TCP flow.
"""

    return text, [r for x in runs for r in x[2:]]


def closing():
    mixes = [
        ["20mbit/10ms", "5mbit/40ms"],
        ["50mbit/2.5ms", "2mbit/60ms"],
        ["25mbit/5ms", "1mbit/60ms"],
        ["50mbit/5ms", "10mbit/40ms", "2mbit/80ms"],
        ["50mbit/2.5ms", "10mbit/20ms", "2mbit/60ms"],
        ["20mbit/10ms/loss=1%", "5mbit/40ms"],
    ]
    mix_runs = []
    for m in mixes:
        mix_runs.append((m, {s: run(*links(*m), "--scheduler", s) for s in ("edpf", "minrtt", "wrr")}))
    red_links = links("2mbit/20ms/loss=5%", "2mbit/60ms/loss=10%")
    red = ["--workload", "cbr:500kbit", "--deadline", "500ms", "--duration", "60s"]
    red_runs = [(s, run(*red_links, *red, "--scheduler", s)) for s in ("redundant", "minrtt")]
    alone = [run(*links(l), *red, "--scheduler", "minrtt") for l in ("2mbit/20ms", "2mbit/60ms")]

    def mix_table():
        rows = []
        for m, rs in mix_runs:
            e, mr, w = rs["edpf"].result, rs["minrtt"].result, rs["wrr"].result
            rows.append([" + ".join(f"`{x}`" for x in m), f"{e['efficiency']:.3f}",
                         f"{e['reorder_max_steady_packets']} ({e['reorder_max_packets']})",
                         f"{mr['efficiency']:.3f}", f"{mr['reorder_max_steady_packets']} ({mr['reorder_max_packets']})",
                         f"{w['efficiency']:.3f}", f"{w['reorder_max_steady_packets']} ({w['reorder_max_packets']})"])
        return table(["links (rate/one-way delay)", "edpf efficiency", "edpf reorder max",
                      "minrtt efficiency", "minrtt reorder max", "wrr efficiency", "wrr reorder max"], rows)

    def red_table():
        rows = []
        loss_a, loss_b = (p["datagram_loss_pct"] for p in red_runs[0][1].result["paths"])
        for s, r in red_runs:
            c = r.result["classes"][0]
            rows.append([s, pct(c["loss_pct"]), f"{c['latency_mean_ms']:.1f}", f"{c['latency_p99_ms']:.1f}",
                         c["duplicates"]])
        rows.append(["product of the two paths' losses", pct(loss_a * loss_b / 100), "—", "—", "—"])
        for l, r in zip(("fast link alone", "slow link alone"), alone):
            c = r.result["classes"][0]
            rows.append([l + " (no loss)", pct(c["loss_pct"]), f"{c['latency_mean_ms']:.1f}",
                         f"{c['latency_p99_ms']:.1f}", "—"])
        return table(["", "loss %", "latency mean ms", "p99 ms", "duplicates delivered"], rows)

    def text():
        return f"""## Closing figures

**EDPF on heterogeneous mixes** (bulk, BBR, 30 s; efficiency = goodput ÷ sum of the raw link
rates, IP/UDP and braid headers included in the rates; reorder max = packets held behind a gap
at the receiver after the 5 s warm-up, whole run in brackets). Bandwidth ratios up to 25:1,
RTTs from 5 to 160 ms:

{mix_table()}

The lossy mix holds packets behind each lost one for a round trip, whatever the scheduler
(seed 004's loss test saw 70–80). `wrr` here weights by measured capacity.

**Redundant mode** (CBR 500 kb/s of 1000-byte datagrams over `2mbit/20ms/loss=5%` and
`2mbit/60ms/loss=10%`, 500 ms deadline, 60 s). Every datagram leaves on both paths; the
receiver keeps the first copy. The product is of the loss the two paths actually had in the
run:

{red_table()}

{commands([r for _, rs in mix_runs for r in rs.values()] + [r for _, r in red_runs] + alone)}
"""

    return text, [r for _, rs in mix_runs for r in rs.values()] + [r for _, r in red_runs] + alone


HEADER = """# braid: the papers' experiments in the simulator

This file is generated: `python3 bench/experiments.py` builds braid, runs every command below
(`braid sim … --json`, deterministic: same binary, same figures) and rewrites it. Do not edit
by hand; change `bench/experiments.py`. The papers are in `shared/seeds/` (000 piconets,
001 inverse multiplexing, 002 NATALIE, 003 super-aggregation, 004 middleware EDPF); "the
digest" is the reading notes that fixed what the papers leave open.

## Datagrams under congestion control

The papers' striping experiments (seed 000) send UDP over links with no congestion control,
so their losses happen in the links' queues. In braid every path has a congestion window and
a pacer, for datagrams too. A datagram therefore waits at the sender until a path may send it:

* **work-conserving schedulers** (`minrtt`, `edpf`, `backup`, `deadline`, `redundant`) keep
  it in its traffic class's queue and hand it to the first suitable path that can send;
* **striping schedulers** (`random`, `rr`, `wrr`, `lps`, `fps`, `ips`) decide by their own rule
  as the papers' stripers do; a datagram assigned to a path that cannot send yet waits in that
  path's own queue at the sender.

Either way a datagram is dropped at the sender when its class deadline (`--deadline`) passes —
the experiments use 0.5–2 s, the queueing a drop-tail link queue of the papers' sizes would
give — and the `deadline` scheduler (seed 001's MMTP) drops it as soon as no path can deliver
it in time. So the papers' loss figures appear as datagrams dropped in a path's queue at the
sender (per path: assigned minus arrived), and latency includes the wait. Streams always wait
for the chosen path: no stream byte is ever dropped.
"""


EXPERIMENTS = [seed000_table3, seed000_lps, seed004_table3, seed002_fig7, seed002_admission, seed003, closing]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "experiments.md"))
    ap.add_argument("--no-build", action="store_true", help="use the existing target/release/braid")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "-p", "braid"], cwd=ROOT, check=True)
    texts = []
    for exp in EXPERIMENTS:
        text, _ = exp()
        texts.append(text)
    started = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(Run.execute, RUNS.values()))
    wall = time.time() - started
    version = subprocess.run([BIN, "--version"], capture_output=True, text=True).stdout.strip()
    doc = HEADER + "\n" + "\n".join(t() for t in texts)
    doc += f"\n---\n\n{len(RUNS)} runs of `{version}`.\n"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(doc)
    print(f"wrote {args.out} ({len(RUNS)} runs, {wall:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
