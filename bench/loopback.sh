#!/usr/bin/env bash
# Unshaped loopback throughput of one TCP stream through braid (client and server, two paths:
# 127.0.0.1 and 127.0.0.2), next to a plain TCP copy over loopback, in one run.
# Prints Gbit/s and CPU-seconds per GB (user+system of the processes involved, and the system
# part alone).
# Needs: iperf3. Usage: bench/loopback.sh [--json] [--download] [--floor] [SECONDS]
# By default iperf3 sends client -> server through the client's port forward (an upload: the
# client's send path, the server's receive path). --download reverses both streams (iperf3 -R,
# the TCP baseline too): the server's send path and the client's receive path.
# --json adds one JSON object on the last line:
#   {"braid_gbps", "braid_cpu_s_per_gb", "tcp_gbps", "tcp_cpu_s_per_gb", "paths", "seconds",
#    "direction": "upload"|"download", "braid_system_cpu_s_per_gb", "tcp_system_cpu_s_per_gb"}
# --floor also runs, in the same run, the floor relay (crates/braid-emu/examples/floor_relay.rs:
# TCP sealed into GSO'd UDP datagrams of braid's size and back, with no protocol) and adds
# "floor_gbps", "floor_cpu_s_per_gb" to the JSON: what any user-space TCP-over-encrypted-UDP
# relay pays on this machine, so braid's own cost is what it spends above it. FLOOR_DATAGRAM=N
# sets the floor's datagram size (default 1452, braid's starting size; braid's paths search up
# to loopback's MTU and send 65,000-byte datagrams here, so FLOOR_DATAGRAM=65000 compares like
# with like); the JSON gets "floor_datagram".
# BRAID=path/to/braid measures that binary instead of building this tree's (side-by-side
# comparisons of two builds).
set -euo pipefail
JSON=0
DIRECTION=upload
REVERSE=()
FLOOR=0
ARGS=()
for a in "$@"; do
  case "$a" in
    --json) JSON=1 ;;
    --download) DIRECTION=download; REVERSE=(-R) ;;
    --floor) FLOOR=1 ;;
    -*) echo "bench/loopback.sh: unknown option $a (usage: bench/loopback.sh [--json] [--download] [--floor] [SECONDS])" >&2; exit 2 ;;
    *) ARGS+=("$a") ;;
  esac
done
SECS=${ARGS[0]:-10}
cd "$(dirname "$0")/.."
if [ -z "${BRAID:-}" ]; then cargo build -q --release -p braid; fi
B=${BRAID:-$PWD/target/release/braid}
F=${FLOOR_RELAY:-$PWD/target/release/examples/floor_relay}
if [ "$FLOOR" = 1 ] && [ -z "${FLOOR_RELAY:-}" ]; then cargo build -q --release -p braid-emu --example floor_relay; fi
# shellcheck source=bench/common.sh
. bench/common.sh
command -v iperf3 >/dev/null || { echo "bench/loopback.sh needs iperf3" >&2; exit 1; }

iperf3 -s -p 5299 -1 >/dev/null 2>&1 & PIDS+=($!); IPS1=$!
sleep 0.3
# Plain TCP over loopback.
TCP_JSON=$(iperf3 -c 127.0.0.1 -p 5299 -t "$SECS" -J "${REVERSE[@]}")
wait "$IPS1" 2>/dev/null || true
TCP_BPS=$(echo "$TCP_JSON" | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])')
TCP_CPU=$(echo "$TCP_JSON" | python3 -c 'import json,sys; j=json.load(sys.stdin)["end"]["cpu_utilization_percent"]; print((j["host_total"]+j["remote_total"])/100)')
TCP_SYS=$(echo "$TCP_JSON" | python3 -c 'import json,sys; j=json.load(sys.stdin)["end"]["cpu_utilization_percent"]; print((j["host_system"]+j["remote_system"])/100)')

# The floor: the same forward with no protocol (see the header).
FL_BPS=0; FL_CPU0=0; FL_CPU1=0
if [ "$FLOOR" = 1 ]; then
  iperf3 -s -p 5297 -1 >/dev/null 2>&1 & PIDS+=($!); IPS2=$!
  "$F" 127.0.0.1:5301 127.0.0.1:5297 "${FLOOR_DATAGRAM:-1452}" 2>"$T/floor.log" & PIDS+=($!); FP=$!
  sleep 0.3
  FL_CPU0=$(cpu "$FP")
  FL_JSON=$(iperf3 -c 127.0.0.1 -p 5301 -t "$SECS" -J "${REVERSE[@]}")
  FL_CPU1=$(cpu "$FP")
  wait "$IPS2" 2>/dev/null || true
  kill "$FP" 2>/dev/null || true
  if [ -s "$T/floor.log" ]; then echo "floor relay failed:" >&2; cat "$T/floor.log" >&2; exit 1; fi
  FL_BPS=$(echo "$FL_JSON" | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])')
fi

# braid: server, client with two paths, a port forward to iperf3.
start_braid 7400 127.0.0.1:5300=127.0.0.1:5298 --status 127.0.0.1:7402
iperf3 -s -p 5298 -1 >/dev/null 2>&1 & PIDS+=($!)
sleep 1.5
C0=$(cpu "$CP"); S0=$(cpu "$SP"); CK0=$(sys_cpu "$CP"); SK0=$(sys_cpu "$SP")
BR_JSON=$(iperf3 -c 127.0.0.1 -p 5300 -t "$SECS" -J "${REVERSE[@]}")
C1=$(cpu "$CP"); S1=$(cpu "$SP"); CK1=$(sys_cpu "$CP"); SK1=$(sys_cpu "$SP")
BR_BPS=$(echo "$BR_JSON" | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])')
PATHS=$($B status --addr 127.0.0.1:7402 | grep -cE '^  [0-9]+ ' || true)
python3 - "$SECS" "$TCP_BPS" "$TCP_CPU" "$BR_BPS" "$C0" "$C1" "$S0" "$S1" "$PATHS" "$JSON" "$CK0" "$CK1" "$SK0" "$SK1" "$TCP_SYS" "$DIRECTION" "$FLOOR" "$FL_BPS" "$FL_CPU0" "$FL_CPU1" <<'PY'
import json, os, sys
(secs, tcp_bps, tcp_cpu_frac, br_bps, c0, c1, s0, s1, paths, as_json, ck0, ck1, sk0, sk1, tcp_sys_frac, direction,
 floor, fl_bps, fl0, fl1) = sys.argv[1:]
secs=float(secs); tcp_bps=float(tcp_bps); br_bps=float(br_bps)
tcp_gb = tcp_bps*secs/8/1e9; br_gb = br_bps*secs/8/1e9
tcp_cpu = float(tcp_cpu_frac)*secs; tcp_sys = float(tcp_sys_frac)*secs
br_cpu = (float(c1)-float(c0)) + (float(s1)-float(s0))
br_sys = (float(ck1)-float(ck0)) + (float(sk1)-float(sk0))
print(f"{direction} (iperf3 {'server -> client, -R' if direction == 'download' else 'client -> server'})")
print(f"{'':28} {'Gbit/s':>8} {'CPU-s per GB':>13} {'user':>6} {'system':>7}")
print(f"{'plain TCP over loopback':28} {tcp_bps/1e9:8.2f} {tcp_cpu/tcp_gb:13.2f} {(tcp_cpu-tcp_sys)/tcp_gb:6.2f} {tcp_sys/tcp_gb:7.2f}   (iperf3 sender+receiver)")
floor = floor == "1"
if floor:
    fl_bps = float(fl_bps); fl_gb = fl_bps*secs/8/1e9; fl_cpu = float(fl1) - float(fl0)
    print(f"{'floor relay (no protocol)':28} {fl_bps/1e9:8.2f} {fl_cpu/fl_gb:13.2f} {'':6} {'':7}   (one process: TCP in, seal, UDP, open, TCP out)")
print(f"{'braid, 1 stream, '+paths+' paths':28} {br_bps/1e9:8.2f} {br_cpu/br_gb:13.2f} {(br_cpu-br_sys)/br_gb:6.2f} {br_sys/br_gb:7.2f}   (braid client+server; iperf3 not counted)")
print(f"ratio braid / TCP: {br_bps/tcp_bps:.3f} of the Gbit/s, {(br_cpu/br_gb)/(tcp_cpu/tcp_gb):.2f} x the CPU per GB")
if floor:
    print(f"ratio floor / TCP: {fl_bps/tcp_bps:.3f} of the Gbit/s, {(fl_cpu/fl_gb)/(tcp_cpu/tcp_gb):.2f} x the CPU per GB; "
          f"braid / floor: {br_bps/fl_bps:.3f} of the Gbit/s, {(br_cpu/br_gb)/(fl_cpu/fl_gb):.2f} x the CPU per GB")
print(f"braid CPU: client {float(c1)-float(c0):.2f} s (system {float(ck1)-float(ck0):.2f}), "
      f"server {float(s1)-float(s0):.2f} s (system {float(sk1)-float(sk0):.2f}) over {secs:.0f} s")
if as_json == "1":
    extra = {"floor_gbps": round(fl_bps/1e9, 3), "floor_cpu_s_per_gb": round(fl_cpu/fl_gb, 3),
             "floor_datagram": int(os.environ.get("FLOOR_DATAGRAM", "1452"))} if floor else {}
    print(json.dumps({
        "braid_gbps": round(br_bps/1e9, 3), "braid_cpu_s_per_gb": round(br_cpu/br_gb, 3),
        "tcp_gbps": round(tcp_bps/1e9, 3), "tcp_cpu_s_per_gb": round(tcp_cpu/tcp_gb, 3),
        "paths": int(paths), "seconds": secs, "direction": direction,
        "braid_system_cpu_s_per_gb": round(br_sys/br_gb, 3), "tcp_system_cpu_s_per_gb": round(tcp_sys/tcp_gb, 3), **extra,
    }))
PY
