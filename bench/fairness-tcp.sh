#!/usr/bin/env bash
# Kernel TCP's fairness through one shaped link, the figure to set beside braid's
# `many_sessions` example (issue 13: 100 active sessions within 10 % of each other).
#
# Two namespaces joined by a veth whose two ends are each shaped by htb to RATE with a bfifo
# of ~100 ms (the lab recipe's link: no netem on this kernel, so no added delay; the round trip
# is the queue's). iperf3 runs FLOWS parallel TCP flows (-P) for DURATION seconds in the
# download direction (server → client) with the given congestion control, and this prints,
# as many_sessions does, each flow's goodput over the second half, the largest deviation
# from the mean as a share of the mean, and Jain's index; the last line is one JSON object.
#
#   sudo bench/fairness-tcp.sh [--flows 100] [--rate 200mbit] [--duration 20] [--cc cubic]
#
# Root only (namespaces); everything it creates is removed on exit, also on failure.
set -euo pipefail

flows=100 rate=200mbit duration=20 cc=cubic
while [ $# -gt 0 ]; do
  case "$1" in
    --flows) flows=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --cc) cc=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "fairness-tcp.sh: needs root (namespaces)" >&2; exit 2; }
command -v iperf3 >/dev/null || { echo "fairness-tcp.sh: iperf3 is not installed" >&2; exit 2; }
[ "$flows" -le 128 ] || { echo "fairness-tcp.sh: iperf3 runs at most 128 flows" >&2; exit 2; }

tag=bft$$
cli=${tag}c srv=${tag}s
out=$(mktemp -d)
cleanup() {
  for ns in "$cli" "$srv"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true; done
  ip netns del "$cli" 2>/dev/null || true
  ip netns del "$srv" 2>/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT

ip netns add "$cli"
ip netns add "$srv"
ip link add "${tag}a" netns "$cli" type veth peer name "${tag}b" netns "$srv"
ip -n "$cli" addr add 10.99.0.1/24 dev "${tag}a"
ip -n "$srv" addr add 10.99.0.2/24 dev "${tag}b"
# The queue: ~100 ms at the rate, as the simulator's and the bottleneck's default.
bits=$(python3 -c "import re,sys; v,u=re.fullmatch(r'([0-9.]+)([kmg]?)bit','$rate').groups(); print(int(float(v)*{'':1,'k':1e3,'m':1e6,'g':1e9}[u]))")
limit=$((bits / 8 / 10))
for pair in "$cli ${tag}a" "$srv ${tag}b"; do
  set -- $pair
  ip -n "$1" link set lo up
  ip -n "$1" link set "$2" up
  ip netns exec "$1" ethtool -K "$2" tso off gso off gro off >/dev/null 2>&1 || true
  tc -n "$1" qdisc add dev "$2" root handle 1: htb default 1
  tc -n "$1" class add dev "$2" parent 1: classid 1:1 htb rate "$rate" ceil "$rate" quantum 1514
  tc -n "$1" qdisc add dev "$2" parent 1:1 handle 10: bfifo limit "$limit"
done

ip netns exec "$srv" iperf3 -s -1 -D -p 5299
sleep 0.5
ip netns exec "$cli" timeout $((duration + 30)) iperf3 -c 10.99.0.2 -p 5299 -R -P "$flows" -C "$cc" \
  -t "$duration" -i 1 --json >"$out/run.json"

python3 - "$out/run.json" "$flows" "$rate" "$cc" <<'EOF'
import json, sys
run = json.load(open(sys.argv[1]))
flows, rate, cc = int(sys.argv[2]), sys.argv[3], sys.argv[4]
intervals = run.get("intervals") or []
if run.get("error") or not any(iv["streams"] for iv in intervals):
    sys.exit(f"fairness-tcp.sh: iperf3 measured nothing: {run.get('error', 'no intervals')}")
half = intervals[len(intervals) // 2:]
rates = {}
for iv in half:
    for s in iv["streams"]:
        rates.setdefault(s["socket"], []).append((s["bytes"], s["seconds"]))
mbps = [sum(b for b, _ in v) * 8 / sum(t for _, t in v) / 1e6 for v in rates.values()]
n = len(mbps)
total = sum(mbps)
mean = total / n
dev = max(abs(r - mean) for r in mbps) / mean
jain = total ** 2 / (n * sum(r * r for r in mbps))
print(f"kernel TCP ({cc}), {n} flows through {rate}: {total:.1f} Mbit/s in all; each mean {mean:.2f}, "
      f"min {min(mbps):.2f}, max {max(mbps):.2f} Mbit/s; largest deviation {100 * dev:.1f} % of the mean; Jain {jain:.4f}")
print(json.dumps({"flows": n, "cc": cc, "total_mbps": round(total, 2), "min_mbps": round(min(mbps), 3),
                  "max_mbps": round(max(mbps), 3), "max_deviation": round(dev, 4), "jain": round(jain, 5)}))
EOF
