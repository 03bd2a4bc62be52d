#!/usr/bin/env bash
# Checks the running service against its own OpenAPI document with
# schemathesis: every operation, positive and negative generation, every
# check, a fixed seed and a bounded number of examples. Any failure fails.
#   scripts/contract.sh embedded   the embedded default (a fresh data dir)
#   scripts/contract.sh stores     MongoDB (wire) + Redis, as test.sh starts
#                                  them (MOMENTS_TEST_MONGODB_URI/REDIS_URL)
# CONTRACT_EXAMPLES (default 25) and CONTRACT_SEED (default 9) tune the run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stores.sh
backend=${1:-embedded}
need_schemathesis
cargo build --locked --quiet --bin moments

run_dir=$(mktemp -d "$STATE_DIR/contract.XXXXXX")
port=$(free_port)
admin_password="contract-admin-$RANDOM$RANDOM"
server_env=(
  MOMENTS_LISTEN="127.0.0.1:$port"
  MOMENTS_DATA_DIR="$run_dir/data"
  MOMENTS_ADMIN_USERNAME=contractadmin
  MOMENTS_ADMIN_PASSWORD="$admin_password"
  # Thousands of requests from one account and one address would spend every
  # budget in seconds and the rest of the run would check only 429s. The
  # budgets have their own tests (tests/api/rate_limits.rs).
  MOMENTS_RATE_LIMITS=off
  RUST_LOG=warn
)
case $backend in
  embedded) ;;
  stores)
    : "${MOMENTS_TEST_MONGODB_URI:?run by scripts/test.sh, or export it}"
    : "${MOMENTS_TEST_REDIS_URL:?run by scripts/test.sh, or export it}"
    server_env+=(
      MOMENTS_MONGODB_URI="$MOMENTS_TEST_MONGODB_URI"
      MOMENTS_MONGODB_DB="contract_$port"
      MOMENTS_REDIS_URL="$MOMENTS_TEST_REDIS_URL"
      MOMENTS_REDIS_PREFIX="contract$port:"
    )
    ;;
  *) echo "usage: $0 [embedded|stores]" >&2; exit 2 ;;
esac

env "${server_env[@]}" target/debug/moments >"$run_dir/server.log" 2>&1 &
server_pid=$!
cleanup() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  if [ "${keep_logs:-}" = 1 ]; then
    echo "== server log kept in $run_dir/server.log" >&2
  else
    rm -rf "$run_dir"
  fi
}
trap cleanup EXIT
base="http://127.0.0.1:$port"
wait_for moments "$PY" -c "import urllib.request; urllib.request.urlopen('$base/readyz', timeout=1)"

echo "== schemathesis on $backend" >&2
keep_logs=1
# One worker: with two, Python 3.11's ast.parse, which hypothesis calls from
# both threads, fails now and then ("AST constructor recursion depth mismatch").
CONTRACT_BASE_URL="$base" \
CONTRACT_ADMIN_USERNAME=contractadmin CONTRACT_ADMIN_PASSWORD="$admin_password" \
PYTHONPATH="$MOMENTS_ROOT/scripts/contract" SCHEMATHESIS_HOOKS=hooks \
  "$ST_BIN" --config-file "$MOMENTS_ROOT/scripts/contract/schemathesis.toml" \
    run "$base/openapi.json" \
    --checks all --mode all \
    --exclude-checks use_after_free \
    --phases examples,coverage,fuzzing,stateful \
    --seed "${CONTRACT_SEED:-9}" --max-examples "${CONTRACT_EXAMPLES:-25}" \
    --workers 1 --no-color \
    --report junit --report-dir "target/contract/$backend" \
    "${@:2}"
keep_logs=
