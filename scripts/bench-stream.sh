#!/usr/bin/env bash
# Live-update streams under load (examples/bench_stream.rs): 10,000 idle
# streams on one instance, and a like or a post at instance A reaching
# 1,000 streams at instance B on MongoDB (wire) + Redis, each beside a bare
# SSE server in the same binary. Prints the BENCHMARKS.md tables.
#   scripts/bench-stream.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stores.sh
cargo build --release --locked --example bench_stream >&2
start_stores
trap 'stop_stores' EXIT
# Each server and the driver hold one descriptor per stream.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
MOMENTS_MONGODB_URI=$MOMENTS_TEST_MONGODB_URI MOMENTS_REDIS_URL=$MOMENTS_TEST_REDIS_URL \
  target/release/examples/bench_stream
