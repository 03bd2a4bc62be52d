#!/usr/bin/env bash
# Runs every test: starts redis-server, a six-node Redis Cluster, nx-27017
# and FerretDB on free ports (installing or building them once if needed),
# runs the whole suite with the API tests on the embedded default, runs the
# API tests again on MongoDB + Redis, on MongoDB + Redis Cluster and on
# FerretDB + Redis (with the store conformance module), checks the running
# service against its OpenAPI document (schemathesis), drives the web client
# in headless chromium (Playwright), stops the stores.
# Extra arguments go to `cargo test` (e.g. a test name filter).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stores.sh
# Stores given from outside (docker-compose's `tests` service points at its
# MongoDB and Redis) are used as they are; otherwise local ones are started.
if [ -n "${MOMENTS_TEST_MONGODB_URI:-}" ] && [ -n "${MOMENTS_TEST_REDIS_URL:-}" ]; then
  echo "== on the given stores: $MOMENTS_TEST_MONGODB_URI, $MOMENTS_TEST_REDIS_URL" >&2
else
  trap stop_stores EXIT
  start_stores
fi
if [ -z "${MOMENTS_TEST_REDIS_CLUSTER_URL:-}" ]; then
  trap stop_stores EXIT
  start_redis_cluster
fi
if [ -z "${MOMENTS_TEST_FERRETDB_URI:-}" ]; then
  trap stop_stores EXIT
  start_ferretdb
fi
# Everything, with the API suite on the embedded default...
cargo test --all-targets --locked "$@"
# ...and the API suite again on MongoDB (wire) + Redis...
MOMENTS_TEST_BACKEND=stores cargo test --locked --test api "$@"
# ...and on MongoDB (wire) + Redis Cluster.
MOMENTS_TEST_BACKEND=stores MOMENTS_TEST_REDIS_URL=$MOMENTS_TEST_REDIS_CLUSTER_URL \
  cargo test --locked --test api "$@"
# ...and on FerretDB + Redis, with the store conformance module first: a
# second MongoDB-wire server, with deviations of its own (docs/FERRETDB.md).
MOMENTS_TEST_MONGODB_URI=$MOMENTS_TEST_FERRETDB_URI cargo test --locked --test conformance "$@"
MOMENTS_TEST_BACKEND=stores MOMENTS_TEST_MONGODB_URI=$MOMENTS_TEST_FERRETDB_URI \
  cargo test --locked --test api "$@"
# ...and the API contract, on both (scripts/contract.sh), and the web
# client in a real browser, on all four (scripts/browser.sh). Skipped only when
# a test filter was given: a filter means "run these tests", not the fuzzer
# or the browser.
if [ $# -eq 0 ]; then
  scripts/contract.sh embedded
  scripts/contract.sh stores
  scripts/browser.sh embedded
  scripts/browser.sh stores
  MOMENTS_TEST_REDIS_URL=$MOMENTS_TEST_REDIS_CLUSTER_URL scripts/browser.sh stores
  MOMENTS_TEST_MONGODB_URI=$MOMENTS_TEST_FERRETDB_URI scripts/browser.sh stores
fi
