# Shared by bench/loopback.sh and bench/cpu-profile.sh (sourced, not run): a scratch directory
# $T, the processes to stop in PIDS, and a trap that stops them and removes $T on any exit,
# showing the daemons' logs ($T/*.log) when the script failed; and CPU-time readers.
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
