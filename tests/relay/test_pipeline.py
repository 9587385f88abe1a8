"""The request pipeline in the spec's order, routing, and body/query schemas."""

from urllib.parse import quote

import pytest
from relay_helpers import Harness, error, op, state_bytes

from simkit.protocol.http import Refused
from simkit.relay import RateLimit, Request, routing
from simkit.relay.routing import match

# --- pipeline step 1: rate limit (429) ----------------------------------------


def test_pipeline_rate_limit_429_comes_before_every_other_check():
    h = Harness(rate_limits={"read": RateLimit(burst=2, refill_ms=1_000)})
    # an unregistered device: without the limit this would be 403
    assert h.call("GET", "/devices", ("alice", "zz")).status == 403
    assert h.call("GET", "/devices", ("alice", "zz")).status == 403
    response = h.call("GET", "/devices", ("alice", "zz"))
    assert response.status == 429
    assert response.json() == {
        "error": "rate-limited",
        "message": "too many read requests; retry in 1000 ms",
        "retryAfterMs": 1000,
    }
    assert response.headers["retry-after"] == "1"


def test_pipeline_rate_limit_refills_on_the_injected_clock():
    h = Harness(rate_limits={"read": RateLimit(burst=1, refill_ms=500)})
    h.register("alice", "a1")
    assert h.call("GET", "/devices").status == 200
    assert h.call("GET", "/devices").status == 429
    h.clock.advance(499)
    assert h.call("GET", "/devices").json()["retryAfterMs"] == 1
    h.clock.advance(1)
    assert h.call("GET", "/devices").status == 200


def test_pipeline_rate_limit_is_per_member_and_per_bucket():
    h = Harness(rate_limits={"read": RateLimit(burst=1, refill_ms=10_000)})
    h.register("alice", "a1")
    h.register("bob", "b1")
    assert h.call("GET", "/devices").status == 200
    assert h.call("GET", "/devices").status == 429
    assert h.call("GET", "/devices", ("bob", "b1")).status == 200  # another member
    assert h.push("u", [op("r1", 1)]).status == 200  # another bucket (write)


def test_pipeline_request_without_identity_is_never_rate_limited_only_401():
    h = Harness(rate_limits={"read": RateLimit(burst=1, refill_ms=10_000)})
    for _ in range(3):
        assert h.call("GET", "/devices", who=None).status == 401


def test_pipeline_default_rate_limits_never_throttle_devices_syncing_every_two_seconds():
    h = Harness()
    devices = [f"a{i}" for i in range(5)]
    for seed, device in enumerate(devices):
        h.register("alice", device, seed)
    for tick in range(150):  # five minutes: far past what the bursts alone would cover
        for device in devices:
            who = ("alice", device)
            assert h.push("u", [op(f"{device}-{tick}", h.clock.now)], who).status == 200
            assert h.pull("u", who).status == 200
            assert h.call("GET", "/graphs/u/log", who).status == 200
            assert h.call("GET", "/graphs/u/keys", who).status == 200
        h.clock.advance(2_000)


# --- pipeline step 2: authenticate (401) ----------------------------------------


@pytest.mark.parametrize(
    "headers",
    [{}, {"x-member": "alice"}, {"x-device": "a1"}],
    ids=["none", "no-device", "no-member"],
)
def test_pipeline_no_identity_is_401(h, headers):
    response = h.call("GET", "/devices", who=None, headers=headers)
    assert response.status == 401
    assert error(response) == "unauthenticated"


def test_pipeline_header_names_are_case_insensitive(h):
    response = h.call("GET", "/devices", who=None, headers={"X-Member": "alice", "X-DEVICE": "a1"})
    assert response.status == 200


# --- pipeline step 3: safe IDs (403 malformed-identity) -------------------------


@pytest.mark.parametrize(
    "who", [("al:ice", "a1"), ("alice", "a/1"), ("", "a1"), ("alice", "x" * 65), ("alice", "é")]
)
def test_pipeline_unsafe_member_or_device_id_is_403_malformed_identity(h, who):
    for method, path in [("GET", "/devices"), ("PUT", f"/devices/{quote(who[1], safe='')}")]:
        response = h.call(method, path, who, {})
        assert response.status == 403
        assert error(response) == "malformed-identity"


# --- pipeline step 4/5: registered, not revoked ---------------------------------


def test_pipeline_unregistered_device_is_403_device_not_registered(h):
    for who in [("alice", "zz"), ("bob", "a1")]:  # unknown, or registered to another member
        response = h.call("GET", "/graphs/u/keys", who)
        assert (response.status, error(response)) == (403, "device-not-registered")


def test_pipeline_revoked_device_is_403_device_revoked(h):
    assert h.call("POST", "/devices/a2/revoke").status == 200
    response = h.call("GET", "/graphs/u/pull", ("alice", "a2"))
    assert (response.status, error(response)) == (403, "device-revoked")


def test_pipeline_put_devices_is_the_only_route_without_a_registered_device(h):
    assert h.call("PUT", "/devices/a9", ("alice", "a9"), {"bad": 1}).status == 400  # got to schema
    for method, path in [
        ("GET", "/devices"),
        ("POST", "/devices/a9/revoke"),
        ("POST", "/graphs/u/push"),
        ("GET", "/graphs/u/pull"),
        ("GET", "/graphs/u/log"),
        ("GET", "/graphs/u/keys"),
        ("GET", "/graphs/u/devices"),
        ("GET", "/graphs/u/keygaps"),
        ("POST", "/graphs/u/keys"),
        ("DELETE", "/graphs/u/keys/1"),
        ("POST", "/graphs/u/blobs/b"),
        ("GET", "/graphs/u/blobs/b"),
        ("POST", "/graphs/u/blobs/b/ack"),
        ("DELETE", "/graphs/u/blobs/b"),
    ]:
        response = h.call(method, path, ("alice", "a9"))
        assert (response.status, error(response)) == (403, "device-not-registered"), path


# --- pipeline step 6: graph resolution ---------------------------------------------


def test_pipeline_caller_not_in_group_is_403_not_a_member(h):
    response = h.pull("g:team", ("carol", "c1"))
    assert response.status == 403
    assert response.json() == {
        "error": "not-a-member",
        "message": "carol is not a member of g:team",
    }
    assert h.pull("g:nosuchgroup").status == 403


def test_pipeline_inactive_group_member_is_not_a_member(h):
    h.host.deactivate("bob")
    assert error(h.pull("g:team", ("bob", "b1"))) == "not-a-member"
    h.host.reactivate("bob")
    assert h.pull("g:team", ("bob", "b1")).status == 200


def test_pipeline_unknown_pairwise_member_is_404_unknown_member(h):
    response = h.pull("d:zed")
    assert response.status == 404
    assert response.json() == {"error": "unknown-member", "message": "no member zed"}


@pytest.mark.parametrize("gid", ["x", "g:", "d:", "g:a:b", "u:alice", "g:bad!", "G:team", "..", ""])
def test_pipeline_malformed_graph_id_is_400_invalid(h, gid):
    response = h.pull(gid)
    assert (response.status, error(response)) == (400, "invalid")


def test_pipeline_pairwise_graph_with_oneself_is_400_invalid(h):
    assert error(h.pull("d:alice")) == "invalid"


def test_pipeline_graph_id_may_arrive_percent_encoded(h):
    assert h.call("POST", "/graphs/g%3Ateam/push", json_body={"ops": [op("r1", 1)]}).status == 200
    assert [o["recordId"] for o in h.pull("g:team").json()["ops"]] == ["r1"]


def test_pipeline_pairwise_graph_is_one_row_for_both_parties(h):
    h.push("d:bob", [op("r1", 1)])
    assert [o["recordId"] for o in h.pull("d:alice", ("bob", "b1")).json()["ops"]] == ["r1"]
    assert list(h.relay.state.graphs) == ["d:alice:bob"]


def test_pipeline_order_earliest_failing_step_answers(h):
    bad_body = b"{not json"
    h.call("POST", "/devices/a2/revoke")
    # revoked device + not a member + bad body -> the device check wins
    r = h.call("POST", "/graphs/g:x/push", ("alice", "a2"), body=bad_body)
    assert error(r) == "device-revoked"
    # registered device + not a member + bad body -> graph resolution wins
    assert error(h.call("POST", "/graphs/g:x/push", body=bad_body)) == "not-a-member"
    # unknown member + bad body -> 404
    assert h.call("POST", "/graphs/d:zed/push", body=bad_body).status == 404
    # everything fine but the body -> 400
    assert error(h.call("POST", "/graphs/u/push", body=bad_body)) == "invalid"


# --- routing: 404 / 405 and path tricks -------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["", "/", "devices", "/device", "/graphs", "/graphs/u", "/graphs/u/push/x", "/devices/a1/x",
     "/graphs/u/../devices/x", "/graphs/u/keys/1/x", "//devices", "/graphs/g%3Ateam%2Fpush"],
)  # fmt: skip
def test_routing_unknown_route_is_404_not_found(h, path):
    response = h.call("GET", path)
    assert response.status == 404
    assert response.json() == {"error": "not-found", "message": "no such route"}


def test_routing_a_remembered_route_hands_out_fresh_params_and_odd_types_are_404():
    """``match`` is remembered per (method, path): what one caller does to its params
    never reaches the next, a long path is not kept, and a path no cache could key on
    is still 404."""
    route, params = match("GET", "/graphs/g%3Ateam/pull")
    params["gid"] = "changed"
    assert match("GET", "/graphs/g%3Ateam/pull") == (route, {"gid": "g:team"})
    size = routing.match.cache_info().currsize
    assert match("GET", "/graphs/g%3A" + "t" * 300 + "/pull")[1] == {"gid": "g:" + "t" * 300}
    assert routing.match.cache_info().currsize == size  # long paths are not kept
    for path in (["/devices"], b"/devices", None):
        with pytest.raises(Refused) as refused:
            match("GET", path)
        assert refused.value.response.status == 404


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", "/devices", "GET"),
        ("GET", "/devices/a1", "PUT"),
        ("PUT", "/graphs/u/keys", "GET, POST"),
        ("PATCH", "/graphs/u/blobs/b1", "DELETE, GET, POST"),
        ("get", "/devices", "GET"),
    ],
)
def test_routing_wrong_method_is_405_with_allow_header(h, method, path, allow):
    response = h.call(method, path)
    assert response.status == 405
    assert error(response) == "method-not-allowed"
    assert response.headers["allow"] == allow


def test_routing_percent_encoded_slash_never_makes_a_segment(h):
    response = h.call("GET", "/graphs/u/blobs/a%2Fb")
    assert response.status == 400
    assert "blob ID" in response.json()["message"]


def test_routing_dot_segments_are_not_normalised(h):
    assert error(h.call("GET", "/graphs/../devices")) == "invalid"  # '..' is a (bad) graph ID


# --- pipeline step 7: body and query schemas -------------------------------------------


@pytest.mark.parametrize(
    "body",
    [b"{", b"\xff\xfe", b"NaN", b'{"ops": [] } x', b"", b'{"ops": Infinity}'],
    ids=["truncated", "not-utf8", "nan", "trailing", "empty", "infinity"],
)
def test_body_that_does_not_parse_is_400_invalid(h, body):
    response = h.call("POST", "/graphs/u/push", body=body)
    assert (response.status, error(response)) == (400, "invalid")


def test_body_nested_deeper_than_8_levels_is_400_invalid(h):
    deep = {"ops": [{"recordId": [[[[[[[[1]]]]]]]]}]}
    response = h.call("POST", "/graphs/u/push", json_body=deep)
    assert response.json()["message"] == "body nests more than 8 levels"
    very_deep = b"[" * 100_000 + b"]" * 100_000
    assert error(h.call("POST", "/graphs/u/push", body=very_deep)) == "invalid"


def test_body_with_huge_numbers_is_400_invalid(h):
    for rev in [b"1e400", b"9" * 5000, b"-1e400", b"9007199254740992"]:
        body = b'{"ops":[{"recordId":"r","rev":' + rev + b',"n":"AA","c":"AA"}]}'
        response = h.call("POST", "/graphs/u/push", body=body)
        assert (response.status, error(response)) == (400, "invalid"), rev


def test_body_on_a_route_that_takes_none_is_400_invalid(h):
    assert error(h.call("GET", "/devices", body=b"{}")) == "invalid"
    assert error(h.call("POST", "/devices/a2/revoke", body=b"{}")) == "invalid"


def test_unknown_query_parameter_is_400_invalid(h):
    response = h.call("GET", "/graphs/u/log", query={"kinds": "a"})
    assert response.json() == {"error": "invalid", "message": "unknown query parameter 'kinds'"}
    assert error(h.call("GET", "/devices", query={"x": "1"})) == "invalid"


# --- 500: an unexpected exception is answered, reported and undone ------------------------


def test_internal_error_is_500_internal_and_reported_as_an_event(h, monkeypatch):
    def boom(*_args):
        raise RuntimeError("bug")

    monkeypatch.setattr(type(h.relay), "_wins", boom)
    h.push("u", [op("r1", 1)])
    before = state_bytes(h.relay)
    h.events.clear()
    response = h.call("POST", "/graphs/u/push", json_body={"ops": [op("r2", 1), op("r1", 2)]})
    assert response.status == 500
    assert response.json() == {
        "error": "internal",
        "message": "internal error; nothing was changed",
    }
    assert state_bytes(h.relay) == before
    assert h.kinds() == ["relay.internal-error"]
    assert h.events[0].error == "RuntimeError('bug')"


def test_request_value_normalises_optional_fields():
    request = Request("GET", "/devices")
    assert (request.query, request.headers, request.body) == ({}, {}, b"")
    with pytest.raises(TypeError):
        Request("POST", "/x", body="text")
