"""What a fresh instance answers, held to its own OpenAPI document.

Schemathesis draws inputs and, by the time it reaches an operation, has
often changed the defaults a client meets first: an unset instance
contact, a new account's empty lists, a fresh admin console. One seed found
`GET /instance` answering `"contact": ""` where the schema says non-blank.
This signs one new account up on a server nothing else has touched and
calls every GET operation whose path names nothing or only the account
itself (`{uid}`), as that account (admin routes as the admin), checking that each answers 200 and that the
body validates against the schema the document gives for it. Run by
scripts/contract.sh before the fuzzing, on its own fresh server.
"""

import os
import sys
import urllib.parse
import uuid

import requests
# Schemathesis's own validator, in the same venv.
from jsonschema_rs import Draft202012Validator, Registry

BASE = os.environ["CONTRACT_BASE_URL"].rstrip("/")
ADMIN = (os.environ["CONTRACT_ADMIN_USERNAME"], os.environ["CONTRACT_ADMIN_PASSWORD"])
# Streams answer text/event-stream until their lifetime ends: their events
# have their own tests (tests/api/stream.rs).
NOT_JSON = {"/api/v1/stream"}


def sign_in(username, password):
    r = requests.post(f"{BASE}/api/v1/sessions", json={"username": username, "password": password}, timeout=30)
    r.raise_for_status()
    return r.json()["token"]


def main():
    doc = requests.get(f"{BASE}/openapi.json", timeout=30).json()
    registry = Registry([("urn:openapi", doc)])
    username = f"fresh{uuid.uuid4().hex[:12]}"
    r = requests.post(
        f"{BASE}/api/v1/users",
        json={"username": username, "password": "fresh-password-1", "nickName": "Fresh"},
        timeout=30,
    )
    r.raise_for_status()
    uid = r.json()["uid"]
    tokens = {"user": sign_in(username, "fresh-password-1"), "admin": sign_in(*ADMIN)}
    # A search of a fresh instance: a page with nothing found, and its marks.
    known = {"username": username, "q": "西湖 lake", "prefix": "fre"}
    checked, problems = 0, []
    for path, item in sorted(doc["paths"].items()):
        op = item.get("get")
        url_path = path.replace("{uid}", str(uid))
        if op is None or "{" in url_path or path in NOT_JSON:
            continue
        query = {}
        for p in op.get("parameters", []):
            if p.get("in") == "query" and p.get("required"):
                if p["name"] not in known:
                    problems.append(f"GET {path}: required query parameter {p['name']} has no fresh value here")
                    continue
                query[p["name"]] = known[p["name"]]
        token = tokens["admin" if "/admin/" in path else "user"]
        resp = requests.get(f"{BASE}{url_path}", params=query, headers={"authorization": f"Bearer {token}"}, timeout=30)
        if resp.status_code != 200:
            problems.append(f"GET {path}: {resp.status_code} {resp.text[:300]}")
            continue
        content = op["responses"].get("200", {}).get("content", {})
        media = next((m for m in content if "json" in m), None)
        if media is None:
            continue
        pointer = "/".join(["#", "paths", path.replace("~", "~0").replace("/", "~1"), "get", "responses", "200", "content", media.replace("/", "~1"), "schema"])
        # A JSON pointer inside a URI: braces and the like percent-encoded.
        ref = "urn:openapi" + urllib.parse.quote(pointer, safe="#/~")
        validator = Draft202012Validator({"$ref": ref}, registry=registry)
        for e in validator.iter_errors(resp.json()):
            where = "/".join(str(x) for x in e.instance_path)
            problems.append(f"GET {path}: at /{where}: {e.message}")
        checked += 1
    for p in problems:
        print(p, file=sys.stderr)
    print(f"fresh instance: {checked} GET operations checked, {len(problems)} problems", file=sys.stderr)
    if problems or checked == 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
