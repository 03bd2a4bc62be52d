#!/usr/bin/env bash
# Runs every test: starts redis-server and nx-27017 on free ports
# (installing them if needed), runs the whole suite with the API tests on the
# embedded default, runs the API tests again on MongoDB + Redis, stops them.
# Extra arguments go to `cargo test` (e.g. a test name filter).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stores.sh
trap stop_stores EXIT
start_stores
# Everything, with the API suite on the embedded default...
cargo test --all-targets --locked "$@"
# ...and the API suite again on MongoDB (wire) + Redis.
MOMENTS_TEST_BACKEND=stores cargo test --locked --test api "$@"
