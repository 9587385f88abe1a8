"""The rogue's raw requests (simkit.fuzz.rogue) reach the relay checks a conforming
client never triggers, each judged against the relay model: the out-of-reach survivors
of ``simkit mutate`` (docs/fuzzing.md, "Operator mutants") named the inputs no
generator produced, and each is drawn now (a revoked device registering again with
its own keys, a bad path parameter behind a valid graph, an unknown blob policy, an
optional JWK member at and past its length bound)."""

import json

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from simkit.fuzz.rogue import ROGUE_GROUP, ROGUES, SPACE
from simkit.model import ModelCheck
from simkit.model.requests import jwk, requests
from simkit.protocol.host import StaticHost
from simkit.protocol.http import Request
from simkit.relay import Relay

T0 = 1_700_000_000_000
EXAMPLES, BURST = 300, 10  # each burst from a fresh relay with one revoked device


def _world():
    host = StaticHost(sorted(ROGUES), {ROGUE_GROUP: sorted(ROGUES), "team": ["mallory"]})
    relay, check = Relay(host, lambda: T0), ModelCheck(host, T0)
    for member, devices in ROGUES.items():
        for device in devices[:2]:
            body = {"pubJwk": jwk(device, 0, "pub"), "sigJwk": jwk(device, 0, "sig")}
            credential = SPACE.credential(member, device)
            body = json.dumps(body).encode()
            send(relay, check, Request("PUT", f"/devices/{device}", None, credential, body))
    revoke = Request("POST", "/devices/m2/revoke", None, SPACE.credential("mallory", "m1"), b"")
    send(relay, check, revoke)
    return relay, check


def send(relay, check, request):
    response = relay.handle(request)
    findings = check.observe(request, T0, response)
    assert findings == [], (request, findings)
    return response


def _error(response) -> str | None:
    try:
        return json.loads(response.body).get("error")
    except (ValueError, AttributeError):
        return None


def _optional_jwk_member(request) -> int | None:
    """The length of a registration's optional JWK member (kid, alg, use), if it has one."""
    try:
        body = json.loads(bytes(request.body))
        members = [body[k][n] for k in ("pubJwk", "sigJwk") for n in ("kid", "alg", "use")
                   if isinstance(body.get(k), dict) and n in body[k]]  # fmt: skip
    except (ValueError, TypeError, AttributeError):
        return None
    return len(members[0]) if members and isinstance(members[0], str) else None


def _reached(request, response) -> set[str]:
    """Which of the inputs this request was, as the relay (and the model) answered it."""
    code, method, path = _error(response), request.method, request.path
    out = set()
    if method == "PUT" and path.startswith("/devices/"):
        own = path.rpartition("/")[2] == request.headers.get("x-device")
        if own and code == "device-revoked":
            out.add("a revoked device registers again with its own keys")
        length = _optional_jwk_member(request)
        if own and length in (64, 65) and code in (None, "invalid"):
            out.add(f"an optional JWK member of {length} characters: {response.status}")
    bad_epoch = path.rpartition("/")[2] in ("0", "-1", "01", "x")
    if method == "DELETE" and "/keys/" in path and code == "invalid" and bad_epoch:
        out.add("a bad epoch in the path behind a valid graph")
    unknown = request.query.get("policy") in ("keep", "Retain")
    if method == "POST" and "/blobs/" in path and code == "invalid" and unknown:
        out.add("an unknown blob policy")
    return out


def test_the_rogue_reaches_the_checks_the_operator_mutants_found_unreached():
    reached: set[str] = set()

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.data())
    def a_burst(data):
        relay, check = _world()
        for _ in range(BURST):
            request = data.draw(requests(check.model, SPACE, T0))
            reached.update(_reached(request, send(relay, check, request)))

    a_burst()
    assert reached >= {
        "a revoked device registers again with its own keys",
        "a bad epoch in the path behind a valid graph",
        "an unknown blob policy",
        "an optional JWK member of 64 characters: 200",
        "an optional JWK member of 65 characters: 400",
    }, reached
