#!/usr/bin/env bash
# Runs every test: starts redis-server, a six-node Redis Cluster, nx-27017,
# FerretDB, SeaweedFS (S3) and OpenSearch on free ports (installing or
# building them once if needed), then:
#   1. the whole suite (`cargo test --all-targets`): the API suite on the
#      embedded default, every other suite on MongoDB-wire + Redis, the
#      media store's on files and on SeaweedFS;
#   2. two lanes at once, which share no store:
#      - MongoDB-wire: the API suite on + Redis and on + Redis Cluster; on
#        the Cluster also redis_live, two_instances and shutdown's store tests;
#        the OpenAPI contract (schemathesis) on + Redis (three seeds) and on
#        + Redis Cluster (one);
#      - FerretDB + Redis: the store conformance module, the API suite,
#        validators, two_instances, shutdown's store tests, the search
#        tests (API and index) on OpenSearch, the contract (one seed), and
#        the contract on the embedded default (three);
#   3. the web client in headless chromium (Playwright) on all four.
# Each lane's output is printed whole when it ends; the README's Tests
# section says which suite runs where, and why one test does not.
# Extra arguments go to `cargo test` (e.g. a test name filter); with one,
# only the cargo suites run.
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
if [ -z "${MOMENTS_TEST_S3_ENDPOINT:-}" ]; then
  trap stop_stores EXIT
  start_seaweedfs
fi
if [ -z "${MOMENTS_TEST_OPENSEARCH_URL:-}" ]; then
  trap stop_stores EXIT
  start_opensearch
fi
CLUSTER=$MOMENTS_TEST_REDIS_CLUSTER_URL
FERRETDB=$MOMENTS_TEST_FERRETDB_URI
# A filter means "run these tests", not the fuzzer or the browser.
whole=$([ $# -eq 0 ] && echo 1 || echo)
if [ -n "$whole" ]; then
  # Installed once here, before the lanes, which would otherwise race to.
  need_schemathesis
  need_browser
fi

timed() { # what, command...: runs it and says how long it took
  local what=$1 start=$SECONDS
  shift
  "$@"
  echo "== $what: $((SECONDS - start)) s" >&2
}

# 1. Everything, with the API suite on the embedded default.
timed "the whole suite" cargo test --all-targets --locked "$@"

# The one test that does not run on the Cluster: it cuts one instance's
# Redis with a TCP proxy, and a cluster client reaches the nodes at the
# addresses they announce, past any proxy. The repair it checks is the
# same code on a cluster (tests/redis_cluster.rs kills a master instead).
PROXY_TEST=what_one_instance_could_not_apply_to_redis_no_instance_serves_stale
# shutdown's tests on MongoDB and Redis (the rest are the embedded
# default's, run once in step 1). `durability` is the embedded store's own:
# kill -9 of the process that holds the documents.
STORES_SHUTDOWN=mongodb_and_redis

lane_mongodb_wire() {
  timed "API suite on MongoDB-wire + Redis" \
    env MOMENTS_TEST_BACKEND=stores cargo test --locked --test api "$@"
  timed "API suite on MongoDB-wire + Redis Cluster" \
    env MOMENTS_TEST_BACKEND=stores MOMENTS_TEST_REDIS_URL="$CLUSTER" cargo test --locked --test api "$@"
  timed "redis_live on the Cluster" \
    env MOMENTS_TEST_REDIS_URL="$CLUSTER" cargo test --locked --test redis_live "$@"
  timed "shutdown's store tests on the Cluster" \
    env MOMENTS_TEST_REDIS_URL="$CLUSTER" cargo test --locked --test shutdown "${@:-$STORES_SHUTDOWN}"
  timed "two_instances on the Cluster" \
    env MOMENTS_TEST_REDIS_URL="$CLUSTER" cargo test --locked --test two_instances "$@" -- --skip "$PROXY_TEST"
  if [ -n "$whole" ]; then
    timed "contract on MongoDB-wire + Redis" scripts/contract.sh stores
    timed "contract on MongoDB-wire + Redis Cluster" \
      env CONTRACT_SEEDS="${CONTRACT_SEEDS:-9}" MOMENTS_TEST_REDIS_URL="$CLUSTER" scripts/contract.sh stores
  fi
}

lane_ferretdb() {
  export MOMENTS_TEST_MONGODB_URI=$FERRETDB
  # The conformance module first: a second MongoDB-wire server, with
  # deviations of its own (docs/FERRETDB.md).
  timed "conformance on FerretDB" cargo test --locked --test conformance "$@"
  timed "API suite on FerretDB + Redis" \
    env MOMENTS_TEST_BACKEND=stores cargo test --locked --test api "$@"
  timed "validators, two_instances on FerretDB" \
    cargo test --locked --test validators --test two_instances "$@"
  timed "shutdown's store tests on FerretDB" cargo test --locked --test shutdown "${@:-$STORES_SHUTDOWN}"
  # Search with OpenSearch as the engine, each test an index of its own.
  timed "search API tests on FerretDB + Redis + OpenSearch" \
    env MOMENTS_TEST_BACKEND=stores MOMENTS_TEST_SEARCH=opensearch \
    cargo test --locked --test api "${@:-search::}"
  timed "search index tests on OpenSearch" \
    env MOMENTS_TEST_SEARCH=opensearch cargo test --locked --test search_index "$@"
  if [ -n "$whole" ]; then
    timed "contract on FerretDB + Redis" env CONTRACT_SEEDS="${CONTRACT_SEEDS:-9}" scripts/contract.sh stores
    # Here only to even out the lanes' times: it uses no store.
    timed "contract on embedded" scripts/contract.sh embedded
  fi
}

# 2. The two lanes at once, each into a log printed when both are done.
logs=$(mktemp -d "$STATE_DIR/lanes.XXXXXX")
lane_mongodb_wire "$@" >"$logs/mongodb-wire.log" 2>&1 &
wire=$!
lane_ferretdb "$@" >"$logs/ferretdb.log" 2>&1 &
ferret=$!
failed=()
wait "$wire" || failed+=(mongodb-wire)
wait "$ferret" || failed+=(ferretdb)
for lane in mongodb-wire ferretdb; do
  echo "== lane $lane" >&2
  cat "$logs/$lane.log"
done
rm -rf "$logs"
if [ ${#failed[@]} -gt 0 ]; then
  echo "== failed: lane ${failed[*]} (its output is above)" >&2
  exit 1
fi

# 3. The web client in a real browser, on all four.
if [ -n "$whole" ]; then
  timed "browser on embedded" scripts/browser.sh embedded
  timed "browser on MongoDB-wire + Redis" scripts/browser.sh stores
  timed "browser on MongoDB-wire + Redis Cluster" env MOMENTS_TEST_REDIS_URL="$CLUSTER" scripts/browser.sh stores
  timed "browser on FerretDB + Redis" env MOMENTS_TEST_MONGODB_URI="$FERRETDB" scripts/browser.sh stores
fi
