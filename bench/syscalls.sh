#!/usr/bin/env bash
# System calls and context switches per GB of one TCP stream on loopback: the floor relay
# (crates/braid-emu/examples/floor_relay.rs, TCP sealed into 65,000-byte UDP datagrams and back,
# no protocol) beside braid's client and server (two paths, as bench/loopback.sh runs them).
# What braid asks of the kernel beyond the floor (its ACK datagrams, its event-loop wake-ups)
# is where its kernel CPU above the floor goes (docs/benchmarks.md, "Where the CPU goes").
# Needs: iperf3, perf (linux-perf) with the syscalls tracepoints, root.
# Usage: bench/syscalls.sh [--download] [SECONDS]; BRAID=path measures that binary.
set -euo pipefail
REVERSE=()
if [ "${1:-}" = --download ]; then REVERSE=(-R); shift; fi
SECS=${1:-6}
cd "$(dirname "$0")/.."
if [ -z "${BRAID:-}" ]; then cargo build -q --release -p braid; fi
B=${BRAID:-$PWD/target/release/braid}
F=$PWD/target/release/examples/floor_relay
cargo build -q --release -p braid-emu --example floor_relay
# shellcheck source=bench/common.sh
. bench/common.sh
command -v iperf3 >/dev/null || { echo "bench/syscalls.sh needs iperf3" >&2; exit 1; }
command -v perf >/dev/null || { echo "bench/syscalls.sh needs perf (apt-get install linux-perf)" >&2; exit 1; }
KINDS="sendmsg sendmmsg recvmsg recvmmsg read write readv writev sendto recvfrom epoll_wait epoll_pwait futex"
EV=$(for k in $KINDS; do printf 'syscalls:sys_enter_%s,' "$k"; done)context-switches
perf stat -x, -e "$EV" true >/dev/null 2>&1 || { echo "perf cannot count syscalls:sys_enter_* here (root and tracefs needed)" >&2; exit 1; }

# count PID OUT: counts PID's events until stopped with SIGINT.
count() { perf stat -x, -e "$EV" -p "$1" -o "$2" & }
bytes() { python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bytes"])'; }

iperf3 -s -p 5297 -1 >/dev/null 2>&1 & PIDS+=($!); IPS=$!
"$F" 127.0.0.1:5301 127.0.0.1:5297 65000 2>"$T/floor.log" & PIDS+=($!); FP=$!
sleep 0.3
count "$FP" "$T/floor.stat"; PF=$!
FLOOR_BYTES=$(iperf3 -c 127.0.0.1 -p 5301 -t "$SECS" -J "${REVERSE[@]}" | bytes)
kill -INT "$PF"; wait "$PF" || true; kill "$FP"; wait "$IPS" 2>/dev/null || true

start_braid 7400 127.0.0.1:5300=127.0.0.1:5298
iperf3 -s -p 5298 -1 >/dev/null 2>&1 & PIDS+=($!)
sleep 1.5
count "$CP" "$T/client.stat"; PC=$!
count "$SP" "$T/server.stat"; PS=$!
BRAID_BYTES=$(iperf3 -c 127.0.0.1 -p 5300 -t "$SECS" -J "${REVERSE[@]}" | bytes)
kill -INT "$PC" "$PS"; wait "$PC" "$PS" || true

python3 - "$T" "$FLOOR_BYTES" "$BRAID_BYTES" "${#REVERSE[@]}" <<'PY'
import sys
t, floor_bytes, braid_bytes, reverse = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
def per_gb(name, nbytes):
    out = {}
    for line in open(f"{t}/{name}.stat"):
        f = line.strip().split(",")
        if len(f) > 2 and f[0].replace(".", "").isdigit():
            out[f[2].replace("syscalls:sys_enter_", "")] = float(f[0]) / (nbytes / 1e9)
    return out
cols = [("floor relay", per_gb("floor", floor_bytes)), ("braid client", per_gb("client", braid_bytes)),
        ("braid server", per_gb("server", braid_bytes))]
print(f"{'download' if reverse else 'upload'}: per GB delivered (floor {floor_bytes / 1e9:.2f} GB, braid {braid_bytes / 1e9:.2f} GB)")
print(f"| event | {' | '.join(c for c, _ in cols)} |")
print("| --- |" + " --- |" * len(cols))
for k in sorted({k for _, c in cols for k in c}):
    if any(c.get(k, 0) >= 1 for _, c in cols):
        print(f"| {k} | {' | '.join(f'{c.get(k, 0):,.0f}' for _, c in cols)} |")
PY
