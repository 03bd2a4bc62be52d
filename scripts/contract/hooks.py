"""Schemathesis hooks for scripts/contract.sh: signs the fuzzer in.

Every operation runs signed in as an ordinary user, admin routes as the
admin. The fuzzer may sign its own session out (DELETE /sessions/current,
DELETE /sessions, DELETE /sessions/{id} with its own id); schemathesis then
sees a 401, drops the cached token and asks `get` again, which signs in
anew. If the account is gone or its password changed, a new one is made.
"""

import itertools
import os
import uuid

import requests
import schemathesis

BASE = os.environ["CONTRACT_BASE_URL"].rstrip("/")
ADMIN = (os.environ["CONTRACT_ADMIN_USERNAME"], os.environ["CONTRACT_ADMIN_PASSWORD"])
PASSWORD = "contract-password-1"
_accounts = itertools.count(1)
_user = {"name": None}


def _sign_in(username, password):
    r = requests.post(
        f"{BASE}/api/v1/sessions",
        json={"username": username, "password": password, "device": "schemathesis"},
        timeout=30,
    )
    return r.json()["token"] if r.status_code == 201 else None


def _user_token():
    if _user["name"]:
        token = _sign_in(_user["name"], PASSWORD)
        if token:
            return token
    # First use, or the account was deleted or its password changed.
    name = f"contract{os.getpid()}n{next(_accounts)}"
    r = requests.post(
        f"{BASE}/api/v1/users",
        json={"username": name, "password": PASSWORD, "nickName": "Contract"},
        timeout=30,
    )
    r.raise_for_status()
    _user["name"] = name
    token = _sign_in(name, PASSWORD)
    if token is None:
        raise RuntimeError("a just-registered account could not sign in")
    return token


def _role(case, ctx):
    return "admin" if "/admin/" in ctx.operation.path else "user"


@schemathesis.auth(cache_by_key=_role)
class SignedIn:
    def get(self, case, ctx):
        if _role(case, ctx) == "admin":
            token = _sign_in(*ADMIN)
            if token is None:
                raise RuntimeError("the admin could not sign in")
            return token
        return _user_token()

    def set(self, case, data, ctx):
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {data}"



def _uids(values, most):
    """Whether `values` is a list the server reads as at most `most` uids
    (JSON's integers, 12.0 included)."""

    def uid(m):
        if isinstance(m, bool):
            return False
        if isinstance(m, int):
            return 1 <= m <= 2**63 - 1
        return isinstance(m, float) and m.is_integer() and 1 <= m <= 2**53

    return isinstance(values, list) and len(values) <= most and all(uid(m) for m in values)


def _fresh_idempotency_key(case):
    """A well-formed Idempotency-Key is made unique. Schemathesis draws
    small keys ("0", "a") and so sends one key twice: a replay then answers
    the first request's resource, which a step in between may have deleted,
    and the stateful checks read that as a created resource not found. The
    replay and the reuse (422) are tested by tests/api/idempotency.rs; a
    malformed key is left for the negative checks."""
    headers = case.headers or {}
    for name in list(headers):
        if name.lower() != "idempotency-key":
            continue
        key = headers[name]
        if isinstance(key, str) and 1 <= len(key) <= 255 and all(0x21 <= ord(c) <= 0x7E for c in key):
            headers[name] = uuid.uuid4().hex


@schemathesis.hook.apply_to(method="POST", path="/api/v1/users")
@schemathesis.hook.apply_to(method="POST", path="/api/v1/posts/{id}/comments")
def before_call(ctx, case, kwargs):  # noqa: F811 (hooks register as they are defined)
    _fresh_idempotency_key(case)


@schemathesis.hook.apply_to(method="POST", path="/api/v1/posts")
def before_call(ctx, case, kwargs):  # noqa: F811
    """Rules across the database that a schema cannot draw for, each tested
    in the API suite; a malformed value (too long, not uids) is left for
    the negative checks. Breaking one is 422 (schemathesis.toml accepts
    it), but a post refused for it checks nothing past the refusal, so
    drawn values are made to keep them and the post gets published.

    - Mentions must name users who exist and may see the post, or the post
      is refused with 422 naming them (tests/api/notifications.rs). Drawn
      uids name nobody, so a well-formed list is emptied.
    - An audience's labels must be the author's (422 naming them,
      tests/api/privacy.rs), and drawn label ids are nobody's: a
      well-formed audience keeps its uids (any uid may be named), and names
      one when its labels are dropped."""
    _fresh_idempotency_key(case)
    body = case.body
    if not isinstance(body, dict):
        return
    if _uids(body.get("mentions"), 10):
        body["mentions"] = []
    audience = body.get("audience")
    if (
        isinstance(audience, dict)
        and _uids(audience.get("labels", []), 20)
        and _uids(audience.get("uids", []), 200)
    ):
        audience["labels"] = []
        if not audience.get("uids"):
            audience["uids"] = [1]


@schemathesis.hook.apply_to(method="POST", path="/api/v1/labels")
@schemathesis.hook.apply_to(method="PATCH", path="/api/v1/labels/{id}")
def before_call(ctx, case, kwargs):  # noqa: F811 (hooks register as they are defined)
    """A label holds the owner's friends only (422 naming the others,
    tests/api/privacy.rs); the fuzzer's account has none, so a well-formed
    member list is emptied and the rest of the body is what gets checked."""
    body = case.body
    if isinstance(body, dict) and _uids(body.get("members"), 1000):
        body["members"] = []
