"""ModelCheck's own promises: findings name the rule, free choices are free, JSON is
compared as JSON, and the model follows restarts and rollbacks as the relay does."""

import json

from simkit.model import ModelCheck, RelayModel, compare
from simkit.model.requests import jwk
from simkit.relay import RateLimit, Relay, Request, Response, StaticHost

T0 = 1_700_000_000_000
ALICE = {"x-member": "alice", "x-device": "a1"}


def registration() -> Request:
    body = {"pubJwk": jwk("a1", 0, "pub"), "sigJwk": jwk("a1", 0, "sig")}
    return Request("PUT", "/devices/a1", None, ALICE, json.dumps(body).encode())


def push(*revs: int) -> Request:
    ops = [{"recordId": "r1", "rev": rev, "n": "AAAA", "c": "QUJD"} for rev in revs]
    return Request("POST", "/graphs/u/push", None, ALICE, json.dumps({"ops": ops}).encode())


def answer(status: int, payload: dict) -> Response:
    return Response(status, {"content-type": "application/json"}, json.dumps(payload).encode())


def follow(settings: dict | None = None) -> tuple[Relay, ModelCheck, list[int]]:
    clock = [T0]
    host = StaticHost(["alice"])
    relay = Relay(host, lambda: clock[0], **(settings or {}))
    return relay, ModelCheck(host, T0, **(settings or {})), clock


def test_an_honest_exchange_has_no_findings_and_the_store_agrees():
    relay, check, clock = follow()
    for request in (registration(), push(5, 5, 4), push(9)):
        assert check.observe(request, clock[0], relay.handle(request)) == []
    assert check.store(relay) == []


def test_a_status_mismatch_names_the_pipeline_step():
    model = RelayModel(StaticHost(["alice"]), T0)
    expected = model.handle(Request("GET", "/graphs/u/pull", None, ALICE), T0)
    findings = compare(expected, answer(404, {"error": "not-found", "message": "no"}))
    assert findings == ["pipeline step 4: expected 403 device-not-registered, got 404 not-found"]


def test_an_error_message_is_a_free_choice_but_its_code_and_extras_are_not():
    model = RelayModel(StaticHost(["alice"]), T0)
    expected = model.handle(Request("GET", "/devices", None, {}), T0)
    assert compare(expected, answer(401, {"error": "unauthenticated", "message": "?"})) == []
    assert compare(expected, answer(401, {"error": "no-credential"})) == [
        "pipeline step 2: body.error expected 'unauthenticated', got 'no-credential'"
    ]


def test_json_is_compared_as_json_one_number_type_but_true_is_not_1():
    relay, check, clock = follow()
    check.observe(registration(), clock[0], relay.handle(registration()))
    expected = check.model.handle(push(3), T0)
    got = {"accepted": 1.0, "cursor": 1, "now": T0, "epoch": 0}
    assert compare(expected, answer(200, got)) == []
    assert compare(expected, answer(200, {**got, "accepted": True})) == [
        "push rule 4 (ops in order: written): body.accepted expected 1, got True"
    ]


def test_a_state_change_the_spec_does_not_require_is_a_store_finding():
    relay, check, clock = follow()
    for request in (registration(), push(5)):
        check.observe(request, clock[0], relay.handle(request))
    relay.state.graphs["u:alice"].seq = 7  # a relay that spent numbers it should not have
    assert check.store(relay) == [
        "store: push: counter (the per-graph counter (whole range reserved up front)): "
        "graph u:alice seq expected 1, got 7"
    ]


def test_a_restart_refills_the_rate_limit_buckets_and_a_rollback_restores_the_model():
    settings = {"rate_limits": {"write": RateLimit(burst=2, refill_ms=60_000)}}
    relay, check, clock = follow(settings)
    saved = (relay.snapshot(), check.model.snapshot())
    for request in (registration(), push(1), push(2)):  # the third is over the burst
        assert check.observe(request, clock[0], relay.handle(request)) == []
    relay = Relay.restore(relay.host, lambda: clock[0], saved[0], **settings)
    check.model.restore(saved[1])
    check.restart(clock[0])
    for request in (registration(), push(1)):
        response = relay.handle(request)
        assert response.status == 200
        assert check.observe(request, clock[0], response) == []
    assert check.store(relay) == []
