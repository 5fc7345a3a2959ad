#!/usr/bin/env bash
# Where braid's CPU per byte goes on loopback: one encrypted stream through a port forward
# (braid server and client, two paths, iperf3 at both ends, as bench/loopback.sh runs it),
# sampled with `perf record` on the braid client and server only, the samples sorted into what
# the design needs (AES-GCM, the kernel's TCP and UDP copies and the rest of its network stack)
# and what braid adds (its own code, copies in user space, the allocator).
#
# Prints one row per category: share of the samples and CPU-seconds per GB (the share of the
# run's measured client+server CPU), then, with --json, one JSON object on its last line.
# Needs: perf, iperf3. Usage: bench/cpu-profile.sh [--json] [--download] [SECONDS]
# BRAID=path/to/braid profiles that binary instead of building this tree's. Issue 13's CPU
# target (<= 2x plain TCP per byte) is measured by bench/loopback.sh --floor; this says why the
# figure is what it is.
set -euo pipefail
JSON=0
REVERSE=()
DIRECTION=upload
ARGS=()
for a in "$@"; do
  case "$a" in
    --json) JSON=1 ;;
    --download) DIRECTION=download; REVERSE=(-R) ;;
    -*) echo "bench/cpu-profile.sh: unknown option $a (usage: bench/cpu-profile.sh [--json] [--download] [SECONDS])" >&2; exit 2 ;;
    *) ARGS+=("$a") ;;
  esac
done
SECS=${ARGS[0]:-10}
cd "$(dirname "$0")/.."
command -v iperf3 >/dev/null || { echo "bench/cpu-profile.sh needs iperf3" >&2; exit 1; }
command -v perf >/dev/null || { echo "bench/cpu-profile.sh needs perf (linux-perf)" >&2; exit 1; }
# Without kernel samples (perf_event_paranoid above 1 for a non-root user) every share is wrong.
if [ "$(id -u)" != 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ]; then
  echo "bench/cpu-profile.sh needs kernel samples: run as root or set kernel.perf_event_paranoid to 1 or less" >&2
  exit 1
fi
if [ -z "${BRAID:-}" ]; then cargo build -q --release -p braid; fi
B=${BRAID:-$PWD/target/release/braid}
# shellcheck source=bench/common.sh
. bench/common.sh

start_braid 7410 127.0.0.1:5310=127.0.0.1:5308
iperf3 -s -p 5308 -1 >/dev/null 2>&1 & PIDS+=($!)
sleep 1.5
C0=$(cpu "$CP"); S0=$(cpu "$SP")
iperf3 -c 127.0.0.1 -p 5310 -t "$SECS" -J "${REVERSE[@]}" > "$T/iperf.json" & IC=$!; PIDS+=($IC)
# Sample the middle of the transfer: from its first second to one second before its end.
sleep 1
perf record -q -F 999 -o "$T/perf.data" -p "$CP,$SP" -- sleep "$(( SECS > 3 ? SECS - 2 : 1 ))" >"$T/perf.log" 2>&1
wait "$IC"
C1=$(cpu "$CP"); S1=$(cpu "$SP")
perf report -i "$T/perf.data" --stdio --no-children --sort dso,sym -g none --percent-limit 0 2>/dev/null \
  | grep -v '^#' | grep '%' > "$T/flat.txt"
if ! grep -q '\[k\]' "$T/flat.txt"; then
  echo "bench/cpu-profile.sh: perf recorded no kernel samples (kptr_restrict or paranoid settings?); the shares would be wrong" >&2
  cat "$T/perf.log" >&2
  exit 1
fi
python3 - "$T/flat.txt" "$T/iperf.json" "$SECS" "$C0" "$C1" "$S0" "$S1" "$JSON" "$DIRECTION" "$(basename "$(readlink -f "$B")")" <<'PY'
import json, re, sys
flat, iperf, secs, c0, c1, s0, s1, as_json, direction, exe = sys.argv[1:]
bps = json.load(open(iperf))["end"]["sum_received"]["bits_per_second"]
gb = bps * float(secs) / 8 / 1e9
cpu_per_gb = ((float(c1) - float(c0)) + (float(s1) - float(s0))) / gb
# What the design needs, then what braid adds. First match wins.
CATEGORIES = [
    ("AES-GCM (seal and open)", lambda d, s: re.search(r"aes|gcm|ghash|clmul|chacha|poly1305", s) and "rand_chacha" not in s and d != "[kernel.kallsyms]"),
    ("kernel: copies to and from user space", lambda d, s: d == "[kernel.kallsyms]" and re.search(r"copy_(to|from)_(iter|user)|copy_user|copy_page_(to|from)_iter|rep_movs_alternative|copyout|copyin|__check_object_size|__virt_addr_valid|^memcpy", s)),
    ("kernel: rest of TCP, UDP, loopback, scheduler", lambda d, s: d == "[kernel.kallsyms]"),
    ("user-space copies (memcpy, memmove)", lambda d, s: re.search(r"mem(cpy|move)", s)),
    ("allocator (malloc, free)", lambda d, s: d.startswith("libc") and re.search(r"malloc|calloc|realloc|memalign|free", s)),
    ("braid's code (protocol, driver, runtime)", lambda d, s: d == exe),
    ("other (libc syscalls, vdso, unknown)", lambda d, s: True),
]
shares = {name: 0.0 for name, _ in CATEGORIES}
for line in open(flat):
    m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[[.k]\]\s+(.*)$", line)
    if not m:
        continue
    pct, dso, sym = float(m.group(1)), m.group(2), m.group(3).strip()
    for name, match in CATEGORIES:
        if match(dso, sym):
            shares[name] += pct
            break
total = sum(shares.values()) or 1.0
print(f"{direction}: braid {bps / 1e9:.2f} Gbit/s, {cpu_per_gb:.3f} CPU-s/GB (client+server; iperf3 not counted)")
print(f"{'where the CPU goes':48} {'share':>7} {'CPU-s/GB':>9}")
for name, _ in CATEGORIES:
    share = shares[name] / total
    print(f"{name:48} {share * 100:6.1f}% {share * cpu_per_gb:9.3f}")
if as_json == "1":
    print(json.dumps({
        "direction": direction, "braid_gbps": round(bps / 1e9, 3), "braid_cpu_s_per_gb": round(cpu_per_gb, 3),
        "shares": {name: round(shares[name] / total, 4) for name, _ in CATEGORIES},
    }))
PY
