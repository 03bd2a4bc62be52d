#!/usr/bin/env bash
# Checks the running service against its own OpenAPI document with
# schemathesis: every operation, positive and negative generation, every
# check, fixed seeds and a bounded number of examples. Any failure fails.
#   scripts/contract.sh embedded   the embedded default (a fresh data dir)
#   scripts/contract.sh stores     MongoDB (wire) + Redis, as test.sh starts
#                                  them (MOMENTS_TEST_MONGODB_URI/REDIS_URL)
# Each seed in CONTRACT_SEEDS (default three) runs on a fresh server: one
# seed's draws miss cases another's find, and a failure is reproduced by
# running its seed alone (CONTRACT_SEEDS=17). CONTRACT_EXAMPLES (default
# 25) is the examples per operation and seed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stores.sh
backend=${1:-embedded}
need_schemathesis
failed=()
# First what a fresh server answers to every GET that needs no path
# parameter, before anything has changed its defaults (scripts/contract/fresh.py).
start_moments contract "$backend"
echo "== a fresh instance's answers on $backend, against their schemas" >&2
SUITE_PASSED=
if CONTRACT_BASE_URL="$BASE" CONTRACT_ADMIN_USERNAME="$ADMIN_USERNAME" \
  CONTRACT_ADMIN_PASSWORD="$ADMIN_PASSWORD" "$VENV/bin/python" "$MOMENTS_ROOT/scripts/contract/fresh.py"; then
  SUITE_PASSED=1
else
  failed+=(fresh)
fi
stop_moments
for seed in ${CONTRACT_SEEDS:-9 17 31}; do
  # Thousands of requests from one account and one address would spend every
  # budget in seconds and the rest of the run would check only 429s. The
  # budgets have their own tests (tests/api/rate_limits.rs).
  # A stream answers until its lifetime ends: a second here, so that each
  # call of GET /stream is a whole answer to check.
  start_moments contract "$backend" MOMENTS_RATE_LIMITS=off MOMENTS_STREAM_MAX_SECS=1
  base=$BASE
  echo "== schemathesis on $backend, seed $seed" >&2
  SUITE_PASSED=
  # One worker: with two, Python 3.11's ast.parse, which hypothesis calls from
  # both threads, fails now and then ("AST constructor recursion depth mismatch").
  if CONTRACT_BASE_URL="$base" \
    CONTRACT_ADMIN_USERNAME="$ADMIN_USERNAME" CONTRACT_ADMIN_PASSWORD="$ADMIN_PASSWORD" \
    PYTHONPATH="$MOMENTS_ROOT/scripts/contract" SCHEMATHESIS_HOOKS=hooks \
    "$ST_BIN" --config-file "$MOMENTS_ROOT/scripts/contract/schemathesis.toml" \
      run "$base/openapi.json" \
      --checks all --mode all \
      --exclude-checks use_after_free \
      --phases examples,coverage,fuzzing,stateful \
      --seed "$seed" --max-examples "${CONTRACT_EXAMPLES:-25}" \
      --workers 1 --no-color \
      --report junit --report-dir "target/contract/$backend/seed-$seed" \
      "${@:2}"; then
    SUITE_PASSED=1
  else
    failed+=("$seed")
  fi
  stop_moments
done
trap - EXIT
if [ ${#failed[@]} -gt 0 ]; then
  echo "== the contract check on $backend failed: ${failed[*]} (a seed reruns alone: CONTRACT_SEEDS=N $0 $backend)" >&2
  exit 1
fi
