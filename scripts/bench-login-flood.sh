#!/usr/bin/env bash
# A login flood against a release build on the embedded default: 2,000
# connections signing in with the right password (so each one costs an
# argon2 hash), rate limits off so that the hashing queue's bound is what is
# measured (or, with "limits", on at their defaults, as the service ships).
# Meanwhile /healthz and an anonymous profile read are timed, and the
# server's RSS is sampled every 0.2 s. /healthz alone, before the flood, is
# the ceiling of the same load tool on the same machine.
# Usage: scripts/bench-login-flood.sh [seconds] [connections] [nolimits|limits]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-15}
CONNECTIONS=${2:-2000}
LIMITS=$([ "${3:-nolimits}" = limits ] && echo on || echo off)
source scripts/stores.sh
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk; }
ulimit -n "$(ulimit -Hn)"   # 2,000 connections need more than the usual 1,024 descriptors
cargo build --release --locked --bin moments >&2
DATA=$(mktemp -d)
PORT=$(free_port)
RUN=$(mktemp -d)
MOMENTS_LISTEN=127.0.0.1:$PORT MOMENTS_DATA_DIR=$DATA MOMENTS_RATE_LIMITS=$LIMITS RUST_LOG=warn \
  target/release/moments serve &
APP_PID=$!
trap 'kill $APP_PID $SAMPLER 2>/dev/null; rm -rf "$DATA" "$RUN"' EXIT
SAMPLER=
wait_for moments curl -sf "http://127.0.0.1:$PORT/healthz"
B="http://127.0.0.1:$PORT/api/v1"
UID_=$(curl -sf -X POST "$B/users" -H 'content-type: application/json' \
  -d '{"username":"flooded","password":"correct horse battery"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["uid"])')
cat > "$RUN/login.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.body = '{"username":"flooded","password":"correct horse battery"}'
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init() signed_in, overloaded, limited, other = 0, 0, 0, 0 end
function response(status)
  if status == 201 then signed_in = signed_in + 1
  elseif status == 503 then overloaded = overloaded + 1
  elseif status == 429 then limited = limited + 1
  else other = other + 1 end
end
function done()
  local s, o, l, x = 0, 0, 0, 0
  for _, t in ipairs(threads) do
    s = s + t:get("signed_in"); o = o + t:get("overloaded")
    l = l + t:get("limited"); x = x + t:get("other")
  end
  print(string.format("== sign-ins: %d signed in, %d answered 503 overloaded, %d answered 429, %d other", s, o, l, x))
end
LUA
echo "== $(nproc) cores; $CONNECTIONS connections signing in for ${DURATION}s; rate limits $LIMITS; at $(git rev-parse --short HEAD)"
echo "== server RSS before: $(ps -o rss= -p $APP_PID) KiB"
echo "== ceiling: /healthz alone, 8 connections"
wrk -t1 -c8 -d5s --latency "http://127.0.0.1:$PORT/healthz" | grep -E "Requests/sec|50%|99%"
( while kill -0 $APP_PID 2>/dev/null; do ps -o rss= -p $APP_PID >> "$RUN/rss"; sleep 0.2; done ) &
SAMPLER=$!
wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --timeout 10s --latency -s "$RUN/login.lua" "$B/sessions" > "$RUN/flood" &
FLOOD=$!
sleep 2
echo "== during the flood: /healthz, 8 connections"
wrk -t1 -c8 -d$((DURATION - 5))s --latency "http://127.0.0.1:$PORT/healthz" | grep -E "Requests/sec|50%|99%|Non-2xx"
echo "== during the flood: GET /users/{uid} (a store read), 8 connections"
wrk -t1 -c8 -d3s --latency "$B/users/$UID_" | grep -E "Requests/sec|50%|99%|Non-2xx"
wait $FLOOD
grep -E "Requests/sec|50%|99%|Socket errors|sign-ins" "$RUN/flood"
kill $SAMPLER 2>/dev/null || true
echo "== server RSS: max during the flood $(sort -n "$RUN/rss" | tail -1) KiB, after $(ps -o rss= -p $APP_PID) KiB"
