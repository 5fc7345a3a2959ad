#!/usr/bin/env bash
# Per-link usage as braid counts it against what the kernel counted on each link (issue 11:
# within 1 %). Two namespaces joined by two veth links; nftables ingress counters at each
# link's receiving end count every IP byte of braid's UDP; an iperf3 download and upload
# run through a braid forward; then the client's status (links[].usage) is compared with the
# counters. Needs root, iperf3 and nft. Everything it creates is removed on exit.
#
#   sudo bash bench/usage_nft.sh [seconds per direction, default 5]
set -euo pipefail
SECS=${1:-5}
BRAID=${BRAID_BIN:-$(dirname "$0")/../target/release/braid}
[ "$(id -u)" = 0 ] || { echo "usage_nft: needs root" >&2; exit 2; }
for t in iperf3 nft; do command -v $t >/dev/null || { echo "usage_nft: $t missing" >&2; exit 2; }; done
C=busage-cli-$$ S=busage-srv-$$
DIR=$(mktemp -d)
cleanup() {
  exec 2>/dev/null  # no job-control notices for the daemons killed here
  for ns in $C $S; do
    ip netns pids $ns 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del $ns 2>/dev/null || true
  done
  rm -rf "$DIR"
}
trap cleanup EXIT
ip netns add $C; ip netns add $S
for i in 1 2; do
  ip link add ua$i netns $C type veth peer name ub$i netns $S
  ip -n $C addr add 10.77.$i.1/24 dev ua$i; ip -n $S addr add 10.77.$i.2/24 dev ub$i
  ip -n $C link set ua$i up; ip -n $S link set ub$i up
done
ip -n $C link set lo up; ip -n $S link set lo up
# Link 2 slower, so both carry a share.
tc -n $S qdisc add dev ub2 root tbf rate 30mbit burst 32kb latency 50ms
tc -n $C qdisc add dev ua2 root tbf rate 30mbit burst 32kb latency 50ms
tc -n $S qdisc add dev ub1 root tbf rate 60mbit burst 32kb latency 50ms
tc -n $C qdisc add dev ua1 root tbf rate 60mbit burst 32kb latency 50ms
# Counted where the kernel sees each packet on the wire: at the receiving end's ingress,
# with UDP segmentation offload off on the veths (an output-hook counter sees one GSO
# super-packet with one IP/UDP header for many datagrams, and reads ~1 % low).
for i in 1 2; do
  ip netns exec $C ethtool -K ua$i tx-udp-segmentation off gro off >/dev/null 2>&1 || true
  ip netns exec $S ethtool -K ub$i tx-udp-segmentation off gro off >/dev/null 2>&1 || true
done
ip netns exec $C nft -f - <<EOF
table netdev busage {
  chain in1 { type filter hook ingress device "ua1" priority 0; policy accept; udp sport 7000 counter comment "ua1_in"; }
  chain in2 { type filter hook ingress device "ua2" priority 0; policy accept; udp sport 7000 counter comment "ua2_in"; }
}
EOF
ip netns exec $S nft -f - <<EOF
table netdev busage {
  chain in1 { type filter hook ingress device "ub1" priority 0; policy accept; udp dport 7000 counter comment "ua1_out"; }
  chain in2 { type filter hook ingress device "ub2" priority 0; policy accept; udp dport 7000 counter comment "ua2_out"; }
}
EOF
"$BRAID" genkey > "$DIR/s.key"; "$BRAID" genkey > "$DIR/c.key"; chmod 600 "$DIR"/*.key
SPUB=$("$BRAID" pubkey < "$DIR/s.key"); CPUB=$("$BRAID" pubkey < "$DIR/c.key")
ip netns exec $S env XDG_RUNTIME_DIR="$DIR" "$BRAID" server --listen 0.0.0.0:7000 --key "$DIR/s.key" \
  --client "$CPUB" --allow-private --log warn 2>"$DIR/server.log" &
ip netns exec $S iperf3 -s -B 10.77.1.2 -p 5201 >/dev/null 2>&1 &
sleep 0.5
ip netns exec $C env XDG_RUNTIME_DIR="$DIR" "$BRAID" client --server 10.77.1.2:7000 --server-key "$SPUB" \
  --key "$DIR/c.key" --link 10.77.1.1 --link 10.77.2.1@10.77.2.2:7000 --forward 127.0.0.1:5201=10.77.1.2:5201 \
  --status 127.0.0.1:7002 --set usage_file=none --log warn 2>"$DIR/client.log" &
for _ in $(seq 50); do
  ip netns exec $C "$BRAID" status --addr 127.0.0.1:7002 --json 2>/dev/null | grep -q '"established": true' && break
  sleep 0.2
done
ip netns exec $C iperf3 -c 127.0.0.1 -p 5201 -t "$SECS" -R >/dev/null
ip netns exec $C iperf3 -c 127.0.0.1 -p 5201 -t "$SECS" >/dev/null
sleep 1.2   # one status refresh after the last packet
ip netns exec $C "$BRAID" status --addr 127.0.0.1:7002 --json > "$DIR/status.json"
ip netns exec $C nft -j list table netdev busage > "$DIR/nft-c.json"
ip netns exec $S nft -j list table netdev busage > "$DIR/nft-s.json"
python3 - "$DIR/status.json" "$DIR/nft-c.json" "$DIR/nft-s.json" <<'EOF'
import json, sys
st = json.load(open(sys.argv[1]))
nft = [i for f in sys.argv[2:] for i in json.load(open(f))["nftables"]]
counters = {}
for item in nft:
    rule = item.get("rule")
    if rule and "comment" in rule:
        counters[rule["comment"]] = next(e["counter"]["bytes"] for e in rule["expr"] if "counter" in e)
links = {l["name"].split("@")[0]: l["usage"] for l in st["links"]}
print(f"{'link':<12} {'dir':<9} {'braid (B)':>14} {'kernel (B)':>14} {'braid/kernel':>13}")
worst = 0.0
for addr, dev in (("10.77.1.1", "ua1"), ("10.77.2.1", "ua2")):
    u = links[addr]
    for d, ours, theirs in (("sent", u["sent_bytes"], counters[f"{dev}_out"]), ("received", u["received_bytes"], counters[f"{dev}_in"])):
        r = ours / theirs if theirs else float("nan")
        worst = max(worst, abs(r - 1))
        print(f"{addr:<12} {d:<9} {ours:>14} {theirs:>14} {r:>13.4f}")
print(f"largest difference: {worst*100:.2f}% (target: 1%)")
EOF
