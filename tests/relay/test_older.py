"""The previous release's relay (Versioning rule 3), and the model that judges it: no
``epoch`` on push and pull answers, ``excluding`` dropped (so a rotation that needs it
is refused as incomplete), no log route."""

import json

import pytest
from relay_helpers import Harness, device_body, error, op

from simkit.model import ModelCheck
from simkit.model.older import OlderRelayModel
from simkit.relay import Relay, Request
from simkit.relay.older import OlderRelay


@pytest.fixture
def old() -> Harness:
    harness = Harness(relay_class=OlderRelay)
    for member, device, seed in (("alice", "a1", 1), ("alice", "a2", 2), ("bob", "b1", 3)):
        harness.register(member, device, seed)
    return harness


def test_versioning_3_older_relay_answers_push_and_pull_without_epoch(old):
    old.put_keys("u", 1, ["a1", "a2"])
    pushed = old.push("u", [op("r1", 1)]).json()
    assert pushed == {"accepted": 1, "cursor": 1, "now": pushed["now"]}
    pulled = old.pull("u").json()
    assert "epoch" not in pulled and [o["recordId"] for o in pulled["ops"]] == ["r1"]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_versioning_3_older_relay_has_no_log_route(old, method):
    response = old.call(method, "/graphs/u/log")
    assert (response.status, error(response)) == (404, "not-found")
    encoded = old.call("GET", "/graphs/u/%6Cog")  # the same path, percent-encoded
    assert (encoded.status, error(encoded)) == (404, "not-found")


def test_versioning_3_older_relay_drops_excluding_and_refuses_the_rotation_as_incomplete(old):
    response = old.put_keys("u", 1, ["a1"], excluding=["a2"])
    assert (response.status, error(response)) == (400, "incomplete-rotation")
    assert response.json()["missing"] == ["a2"]
    assert old.put_keys("u", 1, ["a1", "a2"]).json() == {"ok": True, "latestEpoch": 1}


def test_versioning_3_the_reference_relay_keeps_excluding():
    h = Harness()
    h.register("alice", "a1", 1)
    h.register("alice", "a2", 2)
    assert h.put_keys("u", 1, ["a1"], excluding=["a2"]).json()["ok"] is True


def test_older_relay_model_agrees_with_the_older_relay_and_not_with_the_reference():
    """The model is written from the spec's words: it predicts the older relay exactly
    and says where the reference relay differs from an older one."""
    assert _findings(OlderRelay) == []
    found = _findings(Relay)  # each of the differences, in the order they happen
    assert len(found) == 4
    assert "rotation rule 3" in found[0] and "incomplete-rotation" in found[0]
    assert (
        found[1].startswith("push rule 4, versioning rule 3") and "unexpected 'epoch'" in found[1]
    )
    assert found[2].startswith("pull") and "unexpected 'epoch'" in found[2]
    assert "no log route" in found[3]


def _findings(relay_class) -> list[str]:
    """Register two devices, rotate needing ``excluding``, rotate in full, push, pull and
    read the log, each answer held against the older relay's model."""
    h = Harness(relay_class=relay_class)
    check = ModelCheck(h.host, h.clock(), model=OlderRelayModel)
    wrap = [{"deviceId": "a1", "wrapped": "w"}]
    steps = [
        ("a1", "PUT", "/devices/a1", device_body(1)),
        ("a2", "PUT", "/devices/a2", device_body(2)),
        ("a1", "POST", "/graphs/u/keys", {"epoch": 1, "wraps": wrap, "excluding": ["a2"]}),
        ("a1", "POST", "/graphs/u/keys",
         {"epoch": 1, "wraps": [*wrap, {"deviceId": "a2", "wrapped": "v"}]}),
        ("a1", "POST", "/graphs/u/push", {"ops": [op("r1", 1)]}),
        ("a1", "GET", "/graphs/u/pull", None),
        ("a1", "GET", "/graphs/u/log", None),
    ]  # fmt: skip
    found = []
    for device, method, path, body in steps:
        raw = b"" if body is None else json.dumps(body).encode()
        request = Request(method, path, {}, {"x-member": "alice", "x-device": device}, raw)
        found += check.observe(request, h.clock(), h.relay.handle(request))
    return found
