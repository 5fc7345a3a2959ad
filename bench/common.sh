# Shared by bench/loopback.sh and bench/cpu-profile.sh (sourced, not run): a scratch directory
# $T, the processes to stop in PIDS, and a trap that stops them and removes $T on any exit,
# showing the daemons' logs ($T/*.log) when the script failed; CPU-time readers; and the
# loopback braid pair both measure.
T=$(mktemp -d)
PIDS=()
# The daemons log to files (shown when the run fails): what they say as they are stopped
# must not follow a JSON line.
cleanup() {
  rc=$?
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true
  if [ "$rc" != 0 ]; then cat "$T"/*.log >&2 2>/dev/null || true; fi
  rm -rf "$T"
}
# Ctrl-C and kill end the script (exit runs the cleanup once) rather than carry on without $T.
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cpu() { # user+system seconds of a PID (and its threads)
  awk -v hz="$(getconf CLK_TCK)" '{print ($14+$15)/hz}' "/proc/$1/stat"
}
sys_cpu() { # system seconds of a PID (and its threads)
  awk -v hz="$(getconf CLK_TCK)" '{print $15/hz}' "/proc/$1/stat"
}

# start_braid SERVER_PORT FORWARD [CLIENT_ARG...]: a braid server on 127.0.0.1:SERVER_PORT and a
# client with two paths (127.0.0.1 and 127.0.0.2) forwarding FORWARD (LISTEN=TARGET), with fresh
# keys in $T, the binary in $B. Sets SP and CP to their PIDs.
start_braid() {
  local port=$1 forward=$2 spub cpub
  shift 2
  $B genkey > "$T/s.key"; $B genkey > "$T/c.key"; chmod 600 "$T"/*.key
  spub=$($B pubkey < "$T/s.key"); cpub=$($B pubkey < "$T/c.key")
  $B --log warn server --listen "127.0.0.1:$port" --key "$T/s.key" --client "$cpub" --allow-private \
    2>"$T/server.log" & PIDS+=($!); SP=$!
  $B --log warn client --server "127.0.0.1:$port" --server-key "$spub" --key "$T/c.key" \
    --link 127.0.0.1 --link 127.0.0.2 --forward "$forward" "$@" 2>"$T/client.log" & PIDS+=($!); CP=$!
}
