#!/usr/bin/env bash
# Runs the service on local real stores (redis-server and nx-27017, started
# here on free ports and stopped on exit). Extra arguments go to `cargo run`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stores.sh
trap stop_stores EXIT
start_stores
export MOMENTS_MONGODB_URI=$MOMENTS_TEST_MONGODB_URI
export MOMENTS_REDIS_URL=$MOMENTS_TEST_REDIS_URL
cargo run "$@" -- serve
