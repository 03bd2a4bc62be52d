#!/usr/bin/env bash
# HTTP load run of the main read: GET /api/v1/posts/{id} with warm caches.
# Starts redis-server and nx-27017 (scripts/stores.sh), a release build of
# the service, seeds one realistic post (9 pictures, 30 likers, 8 comments
# with replies and comment likes, a mapped device), warms it, then runs wrk.
# Usage: scripts/bench-http.sh [seconds] [connections]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-20}
CONNECTIONS=${2:-32}
source scripts/stores.sh
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk; }
cargo build --release --locked --bin moments >&2
start_stores
PORT=$(free_port)
export MOMENTS_LISTEN=127.0.0.1:$PORT MOMENTS_MONGODB_URI=$MOMENTS_TEST_MONGODB_URI \
  MOMENTS_REDIS_URL=$MOMENTS_TEST_REDIS_URL MOMENTS_MONGODB_DB=bench \
  MOMENTS_ADMIN_USERNAME=admin MOMENTS_ADMIN_PASSWORD=admin-password RUST_LOG=warn
target/release/moments serve &
APP_PID=$!
trap 'kill $APP_PID 2>/dev/null; stop_stores' EXIT
wait_for moments curl -sf "http://127.0.0.1:$PORT/healthz"
SEED=$(python3 - "$PORT" <<'PY'
import json, sys, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}/api/v1"
def call(method, path, token=None, body=None, ctype="application/json"):
    data = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None: req.add_header("content-type", ctype)
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
fans = [user(f"fan{i:02d}") for i in range(30)]
last = None
for i, t in enumerate(fans):
    call("PUT", f"/posts/{post}/like", t)
    if i < 8:
        c = call("POST", f"/posts/{post}/comments", t, {"content": f"第{i}条评论 😀", "replyToCommentId": last})
        call("PUT", f"/comments/{c['id']}/like", author)
        last = c["id"] if i % 2 == 0 else None
call("GET", f"/posts/{post}", fans[0])
print(post, fans[0])
PY
)
read -r POST TOKEN <<<"$SEED"
URL="http://127.0.0.1:$PORT/api/v1/posts/$POST"
curl -sf -H "authorization: Bearer $TOKEN" "$URL" > /dev/null
echo "== $(nproc) cores; wrk -t1 -c$CONNECTIONS -d${DURATION}s --latency (viewer signed in) $URL" >&2
echo "== server RSS before: $(ps -o rss= -p $APP_PID) KiB"
wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency -H "Authorization: Bearer $TOKEN" "$URL"
if [ -n "${BENCH_REPEAT:-}" ]; then for i in 1 2 3; do echo "== RSS: $(ps -o rss= -p $APP_PID) KiB"; wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -H "Authorization: Bearer $TOKEN" "$URL" | grep Requests/sec; done; fi
echo "== response size: $(curl -s -H "authorization: Bearer $TOKEN" "$URL" | wc -c) bytes; server RSS: $(ps -o rss= -p $APP_PID) KiB"
