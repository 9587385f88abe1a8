"""Bad input never breaks the relay: no 5xx, no exception, no trace of a refusal.

Hypothesis throws arbitrary methods, paths, query strings, headers and bodies
at ``handle()``: garbage bytes, deep JSON, huge numbers, wrong types, unsafe
IDs and path tricks, mixed with near-valid requests so that every pipeline step
and every schema is reached.
"""

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from relay_helpers import Harness, jwk, op, state_bytes

from simkit.relay import Request
from simkit.relay.routing import ROUTES

SEGMENTS = [
    "devices", "graphs", "push", "pull", "log", "keys", "keygaps", "blobs", "ack", "revoke",
    "u", "g:team", "g%3Ateam", "d:bob", "d:alice", "d:zed", "g:nope", "g:", "d:", "u:alice",
    "a1", "a2", "a9", "b1", "x1", "1", "0", "01", "..", ".", "", "%2F", "%2e%2e", "x%ZZ",
    "%C3%28", "%00", "\U0001f642", "a" * 65,
]  # fmt: skip
PARAMS = {
    "gid": ["u", "g:team", "g%3Ateam", "d:bob", "d:alice", "d:zed", "g:nope", "g:", "u:alice"],
    "deviceId": ["a1", "a2", "a9", "b1", "c1", "a%3A1"],
    "epoch": ["1", "2", "0", "01", "x", "99999999999999999"],
    "blobId": ["b1", "b2", "x%3A1", ".."],
}
IDENTITIES = [
    {"x-member": "alice", "x-device": "a1"},
    {"x-member": "alice", "x-device": "a2"},  # revoked
    {"x-member": "bob", "x-device": "b1"},
    {"x-member": "carol", "x-device": "c1"},  # not in the group
    {"x-member": "alice", "x-device": "a9"},  # unregistered
    {"x-member": "al:ice", "x-device": "a1"},
    {"x-member": "alice"},
    {},
]
NUMBERS = [b"1e400", b"-1e400", b"9" * 400, b"9007199254740992", b"-0", b"1.5", b"1e3", b"true"]

text = st.text(max_size=12)
segment = st.sampled_from(SEGMENTS) | st.sampled_from(SEGMENTS) | text
leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.sampled_from(SEGMENTS) | text
json_value = st.recursive(
    leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=12,
)  # fmt: skip


arbitrary_paths = st.tuples(
    st.sampled_from(["GET", "PUT", "POST", "DELETE", "PATCH", "get", ""]) | text,
    st.lists(segment, max_size=6).map(lambda parts: "/" + "/".join(parts)) | text,
)
queries = st.just({}) | st.dictionaries(
    st.sampled_from(["after", "limit", "kinds", "shards", "policy", "ttl", "x"]) | text,
    st.sampled_from(["0", "1", "500", "501", "-1", "01", "a,b", "", ",", "retain", "transport",
                     "ephemeral", "2592000000", "2592000001", "1e3", "9" * 30]) | text,
    max_size=3,
)  # fmt: skip
headers = st.builds(
    lambda identity, nonce, extra: {**extra, **identity, **nonce},
    st.sampled_from(IDENTITIES[:1] * 4 + IDENTITIES[2:3] * 2 + IDENTITIES),
    st.sampled_from([{}, {"x-blob-nonce": "AAAA"}, {"x-blob-nonce": "a+b"}]),
    st.just({}) | st.dictionaries(text, text, max_size=2),
)
near_op = st.fixed_dictionaries(
    {"recordId": st.sampled_from(["r1", "r:1", ""]) | leaf, "rev": leaf,
     "n": st.sampled_from(["AAAA", "a+b"]) | leaf, "c": st.sampled_from(["AAAA", ""]) | leaf},
    optional={"e": leaf, "k": leaf, "sh": leaf, "extra": leaf},
)  # fmt: skip
near_wrap = st.fixed_dictionaries(
    {"deviceId": st.sampled_from(["a1", "a2", "b1", "c1", "zz", "a:1"]) | leaf, "wrapped": leaf}
)
near_bodies = st.one_of(
    st.builds(lambda ops: {"ops": ops}, st.lists(near_op | json_value, max_size=3)),
    st.fixed_dictionaries(
        {"epoch": st.integers(-1, 3) | leaf, "wraps": st.lists(near_wrap, max_size=3) | leaf},
        optional={"excluding": st.lists(st.sampled_from(["a1", "b1", "zz"]) | leaf, max_size=2)},
    ),
    st.fixed_dictionaries(
        {"pubJwk": st.just(jwk(1)) | json_value, "sigJwk": st.just(jwk(2)) | json_value},
        optional={"selfSig": leaf, "label": leaf, "d": leaf},
    ),
)
bodies = st.one_of(
    st.just(b""),
    st.binary(max_size=64),
    json_value.map(lambda v: json.dumps(v).encode()),
    near_bodies.map(lambda v: json.dumps(v).encode()),
    st.integers(1, 5_000).map(lambda n: b"[" * n + b"]" * n),
    st.integers(1, 5_000).map(lambda n: b'{"ops":' + b"[" * n + b"]" * n + b"}"),
    st.sampled_from(NUMBERS).map(lambda n: b'{"epoch":' + n + b',"wraps":[]}'),
    st.sampled_from(NUMBERS).map(
        lambda n: b'{"ops":[{"recordId":"r1","rev":' + n + b',"n":"AAAA","c":"AAAA"}]}'
    ),
)
QUERY_VALUES = st.sampled_from(
    ["0", "1", "2", "500", "501", "-1", "01", "a", "a,b", "", ",", "retain", "transport",
     "ephemeral", "2592000001", "9" * 30]
)  # fmt: skip


@st.composite
def requests(draw) -> Request:
    """Mostly the shape a real route expects, so the fuzz reaches every step and schema."""
    if draw(st.sampled_from(["route"] * 4 + ["anything"])) == "anything":
        method, path = draw(arbitrary_paths)
        return Request(method, path, draw(queries), draw(headers), draw(bodies))
    route = draw(st.sampled_from(ROUTES))
    method = draw(st.sampled_from([route.method] * 6 + ["GET", "PUT", "POST", "DELETE"]))
    path = "/" + "/".join(
        draw(st.sampled_from(PARAMS[p[1:]]) | segment) if p.startswith(":") else p
        for p in route.pattern
    )
    query = (
        st.dictionaries(st.sampled_from(route.query), QUERY_VALUES, max_size=2)
        if route.query
        else st.just({})
    )
    expected = {"none": st.just(b""), "raw": st.binary(max_size=16)}.get(
        route.body, near_bodies.map(lambda v: json.dumps(v).encode())
    )
    body = draw(expected | expected | bodies)
    return Request(method, path, draw(query | queries), draw(headers), body)


def world() -> Harness:
    """A relay with something of everything in it, so refusals have state to spoil."""
    h = Harness(rate_limits={})
    for seed, (member, device) in enumerate([("alice", "a1"), ("alice", "a2"), ("bob", "b1"),
                                             ("carol", "c1")]):  # fmt: skip
        h.register(member, device, seed)
    h.push("g:team", [op("r1", 1, k="a"), op("r2", 2)])
    h.put_keys("g:team", 1, ["a1", "a2"], excluding=["b1"])
    h.call("POST", "/graphs/u/blobs/b1", body=b"x", query={"policy": "transport"},
           headers={"x-blob-nonce": "AAAA"})  # fmt: skip
    h.call("POST", "/devices/a2/revoke")
    h.host.set_capabilities("bob", "team", [])
    return h


@settings(max_examples=max(500, settings.default.max_examples))
@given(st.lists(requests(), min_size=1, max_size=4))
def test_bad_input_never_5xx_never_raises_never_leaves_a_trace(sequence):
    h = world()
    for request in sequence:
        before = state_bytes(h.relay)
        response = h.relay.handle(request)
        assert response.status < 500, (request, response)
        if not 200 <= response.status < 300:
            assert state_bytes(h.relay) == before, (request, response)
            assert isinstance(response.json()["error"], str)
    assert "relay.internal-error" not in h.kinds()
