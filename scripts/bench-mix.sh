#!/usr/bin/env bash
# DeathStarBench socialNetwork's mixed workload against a release build:
# the socfb-Reed98 graph (../shared/data), each edge a follow both ways,
# 0-20 posts per user seeded before the run (untimed, through the service
# layer: examples/bench_mix.rs), then 60% home feed, 30% a random user's
# album, 10% a new 256-character post, each as a random signed-in user,
# pages of 10 (scripts/bench-mix.lua). /healthz is measured in the same run
# with the same tool and settings, as the ceiling the mix is judged by.
#
#   scripts/bench-mix.sh embedded|redis|stores [connections] [scale] [seconds]
#
# connections may be a list (16,32): each is measured in turn on the one
# seeding, /healthz first (the later ones see the earlier runs' posts too).
#
# embedded: the default, everything in process; redis: embedded documents,
# live state on a real redis-server; stores: MongoDB (nx-27017) + Redis.
# scale > 1 generates that many times the users and edges with Reed98's
# degree shape, plus five accounts with 5,000-9,000 followers.
# MOMENTS_MIX_PERF=FILE records a perf profile of the first run into FILE.
# The mix runs twice, back to back: the second run shows whether RSS keeps
# growing once the caches are full.
# Per run it also prints the service's CPU and live-store round trips per
# request and, on Redis, Redis's own CPU and commands per request; after the
# runs, the floor: one round trip's cost to the same client and Redis alone
# (examples/bench_redis_floor.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
BACKEND=${1:-embedded}
CONNECTIONS=${2:-16}
SCALE=${3:-1}
DURATION=${4:-20}
EDGES=${MOMENTS_MIX_EDGES:-../shared/data/socfb-Reed98.edges}
source scripts/stores.sh
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk; }
cargo build --release --locked --example bench_mix --example bench_redis_floor >&2
DATA=$(mktemp -d)
LUA=$DATA/mix-data.lua
PORT=$(free_port)
METRICS_PORT=$(free_port)
export MOMENTS_METRICS_LISTEN=127.0.0.1:$METRICS_PORT
export MOMENTS_RATE_LIMITS=off
export MOMENTS_LISTEN=127.0.0.1:$PORT MOMENTS_DATA_DIR=$DATA/docs MOMENTS_MONGODB_DB=mix RUST_LOG=warn
unset MOMENTS_REDIS_URL MOMENTS_MONGODB_URI
MIX_REDIS_PID=
case "$BACKEND" in
  embedded) ;;
  redis)
    need_redis
    REDIS_PORT=$(free_port)
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$DATA" \
      --logfile "$DATA/redis.log" --daemonize no &
    MIX_REDIS_PID=$!
    wait_for redis-server redis-cli -p "$REDIS_PORT" ping
    export MOMENTS_REDIS_URL=redis://127.0.0.1:$REDIS_PORT
    ;;
  stores)
    start_stores
    export MOMENTS_MONGODB_URI=$MOMENTS_TEST_MONGODB_URI MOMENTS_REDIS_URL=$MOMENTS_TEST_REDIS_URL
    ;;
  *) echo "usage: $0 embedded|redis|stores [connections] [scale] [seconds]" >&2; exit 2 ;;
esac
target/release/examples/bench_mix --edges "$EDGES" --lua "$LUA" --scale "$SCALE" >"$DATA/server.log" 2>&1 &
APP_PID=$!
trap 'kill $APP_PID 2>/dev/null; [ -n "$MIX_REDIS_PID" ] && kill $MIX_REDIS_PID 2>/dev/null; stop_stores; rm -rf "$DATA"' EXIT
echo "== seeding (scale $SCALE)" >&2
while [ ! -f "$LUA" ]; do
  kill -0 $APP_PID 2>/dev/null || { cat "$DATA/server.log" >&2; exit 1; }
  sleep 1
done
grep seeded "$DATA/server.log" >&2
cat "$LUA" scripts/bench-mix.lua >"$DATA/mix.lua"

rss() { echo $(( $(ps -o rss= -p $APP_PID) / 1024 )); }
# CPU seconds a process has used, user and system (from /proc).
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.3f %.3f\n", $14/hz, $15/hz}' "/proc/$1/stat"; }
# Redis's own CPU seconds (user + system) and commands served, from INFO.
redis_cpu() {
  redis-cli -p "$REDIS_PORT" info cpu | tr -d '\r' |
    awk -F: '/^used_cpu_(user|sys):/ {t += $2} END {printf "%.3f\n", t}'
}
redis_commands() {
  redis-cli -p "$REDIS_PORT" info commandstats | tr -d '\r' | python3 -c '
import re, sys
stats = [(m.group(1), int(m.group(2)), int(m.group(3)))
         for m in re.finditer(r"cmdstat_(\w+):calls=(\d+),usec=(\d+)", sys.stdin.read())]
print(sum(n for _, n, _ in stats),
      " ".join(f"{c}={n}/{us // 1000}ms" for c, n, us in sorted(stats, key=lambda s: -s[2])[:6]))
'
}
# Round trips to the live store so far (background ones included), from
# the service's own metrics.
live_trips() {
  curl -s "http://127.0.0.1:$METRICS_PORT/metrics" |
    awk '/^moments_store_round_trips_total\{.*port="LiveStore"/ {t += $NF} END {printf "%d\n", t}'
}
# req/s, p50 and p99 in ms, non-2xx, from wrk's --latency output.
summarise() {
  python3 -c '
import re, sys
text = sys.stdin.read()
def ms(v, unit): return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
p = {k: ms(*re.search(rf"\s{k}%\s+([\d.]+)(us|ms|s|m)\b", text).groups()) for k in ("50", "99")}
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
sent = re.search(r"== sent: .*", text)
print("%.0f %.2f %.2f %s" % (rps, p["50"], p["99"], bad.group(1) if bad else 0))
if sent: print(sent.group(0), file=sys.stderr)
'
}

echo "== $(nproc) cores, backend $BACKEND, wrk -t2, scale $SCALE, ${DURATION}s runs, at $(git rev-parse --short HEAD)"
echo "== server RSS after seeding: $(rss) MiB"
for C in ${CONNECTIONS//,/ }; do
  read -r H_RPS H_P50 H_P99 _ < <(wrk -t2 -c"$C" -d5s --latency "http://127.0.0.1:$PORT/healthz" | summarise)
  echo "== $C connections, /healthz: $H_RPS req/s, p50 $H_P50 ms, p99 $H_P99 ms"
  for run in 1 2; do
    PERF_PID=
    if [ -n "${MOMENTS_MIX_PERF:-}" ] && [ $run = 1 ]; then
      perf record -F 499 ${MOMENTS_MIX_PERF_CALLS:--g} -p $APP_PID -o "$MOMENTS_MIX_PERF" -- sleep "$DURATION" >/dev/null 2>&1 &
      PERF_PID=$!
    fi
    read -r APP_USER APP_SYS < <(cpu_of $APP_PID)
    TRIPS=$(live_trips)
    if [ -n "${REDIS_PORT:-}" ]; then
      redis-cli -p "$REDIS_PORT" config resetstat >/dev/null
      REDIS_CPU=$(redis_cpu)
    fi
    read -r RPS P50 P99 BAD < <(wrk -t2 -c"$C" -d"${DURATION}s" --latency -s "$DATA/mix.lua" \
      "http://127.0.0.1:$PORT" | tee "$DATA/wrk-$run.txt" | summarise)
    [ -n "$PERF_PID" ] && wait $PERF_PID
    RATIO=$(python3 -c "print(f'{$RPS / $H_RPS:.3f}')")
    echo "== $C connections, mix run $run: $RPS req/s, p50 $P50 ms, p99 $P99 ms, ratio to /healthz $RATIO, non-2xx $BAD, RSS after $(rss) MiB"
    # Per request: the service's CPU (user, kernel), and Redis's CPU and
    # commands, as Redis itself counts them.
    REQUESTS=$(grep -oE '[0-9]+ requests in' "$DATA/wrk-$run.txt" | grep -oE '^[0-9]+')
    read -r APP_USER2 APP_SYS2 < <(cpu_of $APP_PID)
    python3 -c "print('== $C connections, mix run $run: service CPU per request %.0f us (user %.0f, kernel %.0f)' % (
      ($APP_USER2 - $APP_USER + $APP_SYS2 - $APP_SYS) / $REQUESTS * 1e6,
      ($APP_USER2 - $APP_USER) / $REQUESTS * 1e6, ($APP_SYS2 - $APP_SYS) / $REQUESTS * 1e6))"
    python3 -c "print('== $C connections, mix run $run: %.2f live-store round trips per request' % (($(live_trips) - $TRIPS) / $REQUESTS))"
    if [ -n "${REDIS_PORT:-}" ]; then
      read -r CALLS TOP < <(redis_commands)
      python3 -c "print('== $C connections, mix run $run: redis CPU per request %.0f us, %.1f commands per request (calls/time by command: $TOP)' % (
        ($(redis_cpu) - $REDIS_CPU) / $REQUESTS * 1e6, $CALLS / $REQUESTS))"
    fi
  done
done
# The floor under the Redis path: what a round trip costs the same client
# and Redis with nothing else around it (examples/bench_redis_floor.rs).
if [ -n "${REDIS_PORT:-}" ]; then
  for C in ${CONNECTIONS//,/ }; do
    echo "== $C tasks, $(target/release/examples/bench_redis_floor --redis "$MOMENTS_REDIS_URL" --tasks "$C" --seconds 5)"
  done
fi
