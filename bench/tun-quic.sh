#!/usr/bin/env bash
# QUIC bulk download through braid's TUN over two links next to the same download over one link
# alone without braid (issue 10: >= 1.3 x the best single link), in one run.
#
# Root. Builds and runs the ignored benchmark test in crates/braid/tests/tun_bench.rs: two veth
# links of 40 Mbit/s towards the client, a quinn server on the server namespace, 32 MB per
# download, REPEATS downloads each way (median reported). Namespaces and processes are removed
# when it ends, also on failure (the test's lab drops them).
#
# Usage: bench/tun-quic.sh [REPEATS (default 3)]
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
REPEATS=${1:-3} BRAID_ROOT_TESTS=1 cargo test --release -p braid --test tun_bench -- --ignored --nocapture
