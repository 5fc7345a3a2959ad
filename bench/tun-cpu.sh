#!/usr/bin/env bash
# CPU per GB of braid's TUN path next to its port-forward path (issue 10: TUN <= 1.5 x forward).
#
# Root. Two namespaces joined by one unshaped veth link; one braid server and one braid client
# that runs both front ends at once (--tun and --forward 127.0.0.1:5300=TARGET:5201). iperf3
# moves SIZE bytes to/from TARGET, an address on the server namespace's loopback, once through
# the forward and once through the TUN, REPEATS times each way. Around each transfer the CPU
# time of both braid processes (utime + stime from /proc/PID/stat) is read; the figure is CPU
# seconds (client + server) per GB moved, with the goodput beside it. iperf3's own CPU is not
# counted. Everything is removed on exit, also on failure.
#
# Usage: bench/tun-cpu.sh [SIZE (iperf3 -n, default 1G)] [REPEATS (default 3)]
set -euo pipefail
SIZE=${1:-1G}
REPEATS=${2:-3}
BRAID=${BRAID_BIN:-$(cd "$(dirname "$0")/.." && pwd)/target/release/braid}
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
for t in ip iperf3 python3; do command -v $t >/dev/null || { echo "needs $t" >&2; exit 1; }; done
[ -x "$BRAID" ] || { echo "no braid binary at $BRAID (cargo build --release -p braid)" >&2; exit 1; }

C=btcpu$$c; S=btcpu$$s; DIR=$(mktemp -d); TARGET=10.79.98.1; PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.5
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  ip netns del $C 2>/dev/null || true; ip netns del $S 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT

ip netns add $C; ip netns add $S
ip -n $C link set lo up; ip -n $S link set lo up
ip -n $S addr add 10.79.99.1/32 dev lo; ip -n $S addr add $TARGET/32 dev lo
ip link add bc1 netns $C type veth peer name bs1 netns $S
ip -n $C addr add 10.79.1.1/24 dev bc1; ip -n $S addr add 10.79.1.2/24 dev bs1
ip -n $C link set bc1 up; ip -n $S link set bs1 up
ip -n $C route add 10.79.99.1/32 via 10.79.1.2 dev bc1

"$BRAID" genkey > "$DIR/s.key"; "$BRAID" genkey > "$DIR/c.key"; chmod 600 "$DIR"/*.key
SPUB=$("$BRAID" pubkey < "$DIR/s.key"); CPUB=$("$BRAID" pubkey < "$DIR/c.key")
export XDG_RUNTIME_DIR=$DIR
ip netns exec $S iperf3 -s -B $TARGET -p 5201 >/dev/null 2>&1 & PIDS+=($!)
ip netns exec $S "$BRAID" --log warn server --listen 10.79.99.1:7591 --key "$DIR/s.key" \
  --client "$CPUB" --allow-private & SPID=$!; PIDS+=($SPID)
sleep 0.5
ip netns exec $C "$BRAID" --log warn client --server 10.79.99.1:7591 --server-key "$SPUB" \
  --key "$DIR/c.key" --link bc1 --tun --set "tun.state_file=$DIR/tun-state.json" \
  --forward 127.0.0.1:5300=$TARGET:5201 & CPID=$!; PIDS+=($CPID)
for _ in $(seq 50); do
  ip netns exec $C bash -c "echo > /dev/tcp/$TARGET/5201" 2>/dev/null && break; sleep 0.2
done

cpu() { # CPU seconds of both braid processes
  python3 - "$SPID" "$CPID" <<'EOF'
import os, sys
tck = os.sysconf("SC_CLK_TCK"); total = 0
for pid in sys.argv[1:]:
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    total += int(f[11]) + int(f[12])
print(total / tck)
EOF
}

run() { # NAME HOST PORT DIRFLAG -> prints "NAME DIR goodput_mbit cpu_s_per_gb"
  local name=$1 host=$2 port=$3 dflag=$4 before after json
  before=$(cpu)
  json=$(ip netns exec $C iperf3 -c "$host" -p "$port" -n "$SIZE" $dflag -J)
  after=$(cpu)
  python3 - "$name" "${dflag:-up}" "$before" "$after" <<EOF
import json, sys
d = json.loads('''$json''')
s = d["end"]["sum_received"]
gb = s["bytes"] / 1e9
cpu = float(sys.argv[4]) - float(sys.argv[3])
print(f"{sys.argv[1]:8s} {('down' if sys.argv[2] == '-R' else 'up'):4s} {s['bits_per_second']/1e6:8.0f} Mbit/s  {cpu/gb:6.2f} CPU-s/GB")
EOF
}

echo "SIZE=$SIZE per transfer, $REPEATS repeats; braid client + server CPU per GB moved"
for r in $(seq "$REPEATS"); do
  for d in "" "-R"; do
    run forward 127.0.0.1 5300 "$d"
    run tun $TARGET 5201 "$d"
  done
done
