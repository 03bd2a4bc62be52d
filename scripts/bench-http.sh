#!/usr/bin/env bash
# HTTP load runs against a release build of the service:
#   read   GET /api/v1/posts/{id} with warm caches, as a signed-in viewer
#   write  a mix of new posts, comments, likes and unlikes by 100 users
#   preview  GET of one uploaded picture's preview (a 12 MP phone JPEG's),
#          as a grid loads it, beside GET /healthz
# on the embedded default, on MongoDB (wire) + Redis, or on MongoDB (wire) + a
# six-node Redis Cluster (scripts/stores.sh).
# Usage: scripts/bench-http.sh [embedded|stores|cluster] [read|write|preview] [seconds] [connections]
# MOMENTS_HTTP_PERF=FILE records a perf profile of the measured read or preview run into FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
BACKEND=${1:-embedded}
WORKLOAD=${2:-read}
DURATION=${3:-15}
CONNECTIONS=${4:-32}
source scripts/stores.sh
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk; }
cargo build --release --locked --bin moments >&2
DATA=$(mktemp -d)
PORT=$(free_port)
# Rate limits off unless asked for: one account reads tens of thousands of
# times a second here (MOMENTS_RATE_LIMITS=on MOMENTS_RATE_READS=1000000000/1m
# measures what the checks cost, with budgets too large to refuse).
export MOMENTS_RATE_LIMITS=${MOMENTS_RATE_LIMITS:-off}
export MOMENTS_LISTEN=127.0.0.1:$PORT MOMENTS_DATA_DIR=$DATA MOMENTS_MONGODB_DB=bench \
  MOMENTS_ADMIN_USERNAME=admin MOMENTS_ADMIN_PASSWORD=admin-password RUST_LOG=warn
if [ "$BACKEND" = stores ] || [ "$BACKEND" = cluster ]; then
  start_stores
  export MOMENTS_MONGODB_URI=$MOMENTS_TEST_MONGODB_URI MOMENTS_REDIS_URL=$MOMENTS_TEST_REDIS_URL
fi
if [ "$BACKEND" = cluster ]; then
  start_redis_cluster
  export MOMENTS_REDIS_URL=$MOMENTS_TEST_REDIS_CLUSTER_URL
fi
target/release/moments serve &
APP_PID=$!
trap 'kill $APP_PID 2>/dev/null; stop_stores; rm -rf "$DATA"' EXIT
wait_for moments curl -sf "http://127.0.0.1:$PORT/healthz"
SEED=$(python3 - "$PORT" <<'PY'
import json, sys, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}/api/v1"
def call(method, path, token=None, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None: req.add_header("content-type", "application/json")
    if token: req.add_header("authorization", "Bearer " + token)
    with urllib.request.urlopen(req) as r:
        text = r.read()
        return json.loads(text) if text else None
def user(name):
    call("POST", "/users", body={"username": name, "password": "password-123", "nickName": name + "的昵称",
                                 "headImg": f"https://cdn.example/h/{name}.jpg"})
    return call("POST", "/sessions", body={"username": name, "password": "password-123"})["token"]
admin = call("POST", "/sessions", body={"username": "admin", "password": "admin-password"})["token"]
call("PUT", "/admin/device-models/ONEPLUS%20A6000", admin, {"displayName": {"zh": "一加 6", "en": "OnePlus 6"}})
author = user("author")
post = call("POST", "/posts", author, {"category": "PICTURE", "content": "这是一个带9张图片的动态" * 6,
            "pictureUrls": [f"https://cdn.example/p/{i}.jpg" for i in range(9)], "device": "ONEPLUS A6000",
            "geo": {"lat": 31.23, "lon": 121.47, "name": "上海"}})["id"]
fans = [user(f"fan{i:03d}") for i in range(100)]
last = None
for i, t in enumerate(fans[:30]):
    call("PUT", f"/posts/{post}/like", t)
    if i < 8:
        c = call("POST", f"/posts/{post}/comments", t, {"content": f"第{i}条评论 😀", "replyToCommentId": last})
        call("PUT", f"/comments/{c['id']}/like", author)
        last = c["id"] if i % 2 == 0 else None
call("GET", f"/posts/{post}", fans[0])
with open("/tmp/moments-bench-tokens.lua", "w") as f:
    f.write("tokens = {" + ",".join(json.dumps(t) for t in fans) + "}\n")
    f.write(f"post = \"{post}\"\n")  # a string: Lua would print a 16-digit number as 1.2e+15
print(post, fans[0])
PY
)
read -r POST TOKEN <<<"$SEED"
URL="http://127.0.0.1:$PORT/api/v1/posts/$POST"
echo "== $(nproc) cores, backend $BACKEND, workload $WORKLOAD, $CONNECTIONS connections, ${DURATION}s, rate limits $MOMENTS_RATE_LIMITS, at $(git rev-parse --short HEAD)"
echo "== server RSS before: $(ps -o rss= -p $APP_PID) KiB"
# Profiles the server through the measured run, when MOMENTS_HTTP_PERF names a file.
PERF_PID=
start_perf() {
  if [ -n "${MOMENTS_HTTP_PERF:-}" ]; then
    perf record -F 499 ${MOMENTS_HTTP_PERF_CALLS:--g} -p $APP_PID -o "$MOMENTS_HTTP_PERF" -- sleep "$DURATION" >/dev/null 2>&1 &
    PERF_PID=$!
  fi
}
if [ "$WORKLOAD" = preview ]; then
  cargo run --release --locked --quiet --example sample_photo -- "$DATA/photo.jpg" 4032 3024 6 textured
  PREVIEW=$(curl -sf -H "authorization: Bearer $TOKEN" -F "file=@$DATA/photo.jpg;type=image/jpeg" \
    "http://127.0.0.1:$PORT/api/v1/media" | python3 -c 'import json,sys; print(json.load(sys.stdin)["previewUrl"])')
  echo "== ceiling: GET /healthz, same tool and connections, ${DURATION}s"
  wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency "http://127.0.0.1:$PORT/healthz" | grep -E "Requests/sec|50%|99%"
  echo "== GET $PREVIEW ($(curl -s "http://127.0.0.1:$PORT$PREVIEW" | wc -c) bytes)"
  start_perf
  wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency "http://127.0.0.1:$PORT$PREVIEW" | grep -E "Requests/sec|Transfer/sec|50%|99%"
  [ -n "$PERF_PID" ] && wait $PERF_PID
elif [ "$WORKLOAD" = read ]; then
  echo "== ceiling: GET /healthz, same tool and connections, 5s"
  wrk -t1 -c"$CONNECTIONS" -d5s --latency "http://127.0.0.1:$PORT/healthz" | grep -E "Requests/sec|50%|99%"
  start_perf
  wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency -H "Authorization: Bearer $TOKEN" "$URL"
  [ -n "$PERF_PID" ] && wait $PERF_PID
  echo "== response size: $(curl -s -H "authorization: Bearer $TOKEN" "$URL" | wc -c) bytes"
else
  cat /tmp/moments-bench-tokens.lua scripts/bench-write-mix.lua > /tmp/moments-bench-mix.lua
  wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency -s /tmp/moments-bench-mix.lua "http://127.0.0.1:$PORT"
  python3 - "$PORT" "$POST" "$TOKEN" <<'PY'
import json, sys, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}/api/v1"
req = urllib.request.Request(f"{base}/posts/{sys.argv[2]}", headers={"authorization": "Bearer " + sys.argv[3]})
p = json.load(urllib.request.urlopen(req))
print(f"== after the run: the hot post has {p['likeCount']} likes and {p['commentCount']} comments")
PY
fi
echo "== server RSS after: $(ps -o rss= -p $APP_PID) KiB"
