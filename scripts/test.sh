#!/usr/bin/env bash
# Runs every test on real stores: starts redis-server and nx-27017 on free
# ports (installing them if needed), runs the whole suite, stops them.
# Extra arguments go to `cargo test` (e.g. a test name filter).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stores.sh
trap stop_stores EXIT
start_stores
cargo test --all-targets --locked "$@"
