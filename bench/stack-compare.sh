#!/usr/bin/env bash
# The user-space TCP/IP stack of TUN mode, measured: netstack-smoltcp (as braid builds it)
# against ipstack, same run side by side. Each run terminates FLOWS TCP connections from the
# kernel through a TUN in a namespace of its own (crates/braid-daemon/examples/stack_bench.rs)
# and moves MBYTES in all, up (app -> stack) or down (stack -> app). Prints every run and the
# medians: goodput (Gbit/s) and CPU seconds per GB (the whole process: stack, copies, and the
# kernel's TCP of the local application).
# A run that has not finished in $TIMEOUT seconds (30) counts as failed.
# Usage (root): bench/stack-compare.sh [RUNS=3] [MBYTES=1000] [MTU=1500]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
mbytes=${2:-1000}
mtu=${3:-1500}
cargo build -q --release -p braid-daemon --example stack_bench
bin=$PWD/target/release/examples/stack_bench
ns=braid-stackbench-$$
out=$(mktemp)
cleanup() { ip netns del "$ns" 2>/dev/null || true; rm -f "$out"; }
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up
for dir in up down; do
  for flows in 1 8; do
    for run in $(seq "$runs"); do
      for stack in smoltcp ipstack; do
        line=$(timeout "${TIMEOUT:-30}" ip netns exec "$ns" "$bin" --stack "$stack" --flows "$flows" \
          --direction "$dir" --mbytes "$mbytes" --mtu "$mtu" 2>/dev/null) ||
          line="{\"stack\":\"$stack\",\"flows\":$flows,\"direction\":\"$dir\",\"failed\":true}"
        echo "$line" | tee -a "$out"
      done
    done
  done
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"\n{'direction':9s} {'flows':>5s} | {'smoltcp Gbit/s':>14s} {'CPU s/GB':>8s} | {'ipstack Gbit/s':>14s} {'CPU s/GB':>8s} | failed runs")
for d in ("Up", "Down"):
    for f in (1, 8):
        cells, failed = [], []
        for s in ("smoltcp", "ipstack"):
            rs = [r for r in rows if r["stack"] == s and r["flows"] == f and r["direction"].lower() == d.lower()]
            ok = [r for r in rs if not r.get("failed") and r.get("complete")]
            failed.append(f"{s} {len(rs) - len(ok)}/{len(rs)}")
            if ok:
                cells += [f"{statistics.median(r['gbps'] for r in ok):14.2f}", f"{statistics.median(r['cpu_s_per_gb'] for r in ok):8.2f}"]
            else:
                cells += [f"{'—':>14s}", f"{'—':>8s}"]
        print(f"{d.lower():9s} {f:5d} | {cells[0]} {cells[1]} | {cells[2]} {cells[3]} | {', '.join(failed)}")
PY
