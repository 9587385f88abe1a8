"""Devices: set-once registration, the member's list, revocation (spec: Devices)."""

import pytest
from relay_helpers import T0, device_body, error, jwk, op, state_bytes


def test_put_device_registers_and_reports_fresh(h):
    response = h.call("PUT", "/devices/a3", ("alice", "a3"), device_body(9))
    assert (response.status, response.json()) == (
        200,
        {"ok": True, "deviceId": "a3", "fresh": True},
    )
    assert h.kinds() == ["device.register"]
    assert h.events[0].member_id == "alice" and h.events[0].device_id == "a3"


def test_put_device_with_same_keys_is_idempotent_and_not_fresh(h):
    before = state_bytes(h.relay)
    response = h.call("PUT", "/devices/a1", ("alice", "a1"), device_body(1, label="renamed"))
    assert response.json() == {"ok": True, "deviceId": "a1", "fresh": False}
    assert state_bytes(h.relay) == before  # set-once: the label is not edited either
    assert h.events == []


@pytest.mark.parametrize("key", ["pubJwk", "sigJwk"])
def test_put_device_with_different_keys_is_409_device_key_conflict(h, key):
    body = device_body(1) | {key: jwk(77)}
    response = h.call("PUT", "/devices/a1", ("alice", "a1"), body)
    assert response.status == 409
    assert response.json() == {
        "error": "device-key-conflict",
        "message": "device a1 is bound to other keys; register under a new device ID",
    }


def test_put_device_id_bound_to_another_member_is_409(h):
    response = h.call("PUT", "/devices/a1", ("bob", "a1"), device_body(1))
    assert (response.status, error(response)) == (409, "device-key-conflict")


def test_put_device_same_keys_compare_by_thumbprint_members_only(h):
    body = device_body(1)
    body["pubJwk"] |= {"ext": True, "key_ops": []}
    assert h.call("PUT", "/devices/a1", ("alice", "a1"), body).json()["fresh"] is False


def test_put_device_path_must_name_the_credentials_device_403_device_mismatch(h):
    response = h.call("PUT", "/devices/a7", ("alice", "a1"), device_body(7))
    assert (response.status, error(response)) == (403, "device-mismatch")


def test_put_device_revoked_stays_revoked_403(h):
    h.call("POST", "/devices/a2/revoke")
    response = h.call("PUT", "/devices/a2", ("alice", "a2"), device_body(2))
    assert (response.status, error(response)) == (403, "device-revoked")


def test_put_device_keeps_self_sig_and_label_verbatim(h):
    h.register("alice", "a3", 9, selfSig="c2lnbmF0dXJl", label="Alice’s phone")
    [entry] = [d for d in h.call("GET", "/devices").json()["devices"] if d["deviceId"] == "a3"]
    assert entry["selfSig"] == "c2lnbmF0dXJl"
    assert entry["label"] == "Alice’s phone"


BAD_DEVICE_BODIES = {
    "missing-sigJwk": {"pubJwk": jwk(1)},
    "not-object": [1, 2],
    "wrong-kty": device_body(1) | {"pubJwk": jwk(1) | {"kty": "RSA"}},
    "wrong-curve": device_body(1) | {"pubJwk": jwk(1) | {"crv": "P-384"}},
    "short-x": device_body(1) | {"pubJwk": jwk(1) | {"x": "AAAA"}},
    "padded-x": device_body(1) | {"pubJwk": jwk(1) | {"x": jwk(1)["x"] + "="}},
    "private-d": device_body(1) | {"pubJwk": jwk(1) | {"d": "AAAA"}},
    "ext-not-bool": device_body(1) | {"pubJwk": jwk(1) | {"ext": "yes"}},
    "selfSig-not-b64url": device_body(1, selfSig="a+b/"),
    "selfSig-null": device_body(1, selfSig=None),
    "label-too-long": device_body(1, label="x" * 257),
    "label-number": device_body(1, label=5),
}


@pytest.mark.parametrize("body", BAD_DEVICE_BODIES.values(), ids=BAD_DEVICE_BODIES)
def test_put_device_body_schema_is_400_invalid(h, body):
    response = h.call("PUT", "/devices/a3", ("alice", "a3"), body)
    assert (response.status, error(response)) == (400, "invalid")


def test_versioning_3_put_device_drops_members_it_does_not_know(h):
    """An older relay drops what a newer client adds (as it drops ``excluding``)."""
    response = h.call("PUT", "/devices/a3", ("alice", "a3"), device_body(1, futureField=1))
    assert response.json() == {"ok": True, "deviceId": "a3", "fresh": True}
    [entry] = [d for d in h.call("GET", "/devices").json()["devices"] if d["deviceId"] == "a3"]
    assert "futureField" not in entry


def test_get_devices_lists_the_members_own_devices_revoked_included(h):
    h.call("POST", "/devices/a2/revoke")
    devices = h.call("GET", "/devices").json()["devices"]
    assert [d["deviceId"] for d in devices] == ["a1", "a2"]
    assert devices[1] == {
        "deviceId": "a2",
        "memberId": "alice",
        "pubJwk": jwk(2),
        "sigJwk": jwk(102),
        "selfSig": None,
        "revokedAt": T0,
        "label": None,
        "registeredAt": T0,
    }


def test_revoke_marks_revoked_drops_wraps_and_sets_rotation_required(h):
    h.put_keys("g:team", 1, ["a1", "a2", "b1"])
    h.put_keys("u", 1, ["a1", "a2"])
    h.put_keys("d:carol", 1, ["a1", "c1"])  # a2 holds no key here
    h.events.clear()
    response = h.call("POST", "/devices/a2/revoke")
    assert response.json() == {"ok": True, "rotationOwedFor": ["g:team", "u"]}
    keys = h.call("GET", "/graphs/g:team/keys", ("bob", "b1")).json()
    assert keys["rotationRequired"] is True
    assert h.call("GET", "/graphs/d:carol/keys").json()["rotationRequired"] is False
    graph = h.relay.state.graphs["g:team"]
    assert sorted(graph.wraps[1]) == ["a1", "b1"]
    assert h.kinds() == ["device.revoke", "poke", "poke"]
    assert h.events[0].graphs == ("g:team", "u:alice")
    assert h.events[0].by_device == "a1"


def test_revoke_rotation_owed_for_names_graphs_as_the_caller_addresses_them(h):
    h.put_keys("d:bob", 1, ["a1", "a2", "b1"])
    assert h.call("POST", "/devices/a2/revoke").json()["rotationOwedFor"] == ["d:bob"]


def test_revoke_of_an_already_revoked_device_owes_nothing_new(h):
    h.put_keys("u", 1, ["a1", "a2"])
    h.call("POST", "/devices/a2/revoke")
    before = state_bytes(h.relay)
    response = h.call("POST", "/devices/a2/revoke")
    assert response.json() == {"ok": True, "rotationOwedFor": []}
    assert state_bytes(h.relay) == before


def test_revoke_own_device_then_it_is_locked_out(h):
    assert h.call("POST", "/devices/a1/revoke").status == 200
    assert error(h.call("GET", "/devices")) == "device-revoked"


def test_revoke_another_members_device_is_404_unknown_device(h):
    for target in ["b1", "nosuch"]:
        response = h.call("POST", f"/devices/{target}/revoke")
        assert (response.status, error(response)) == (404, "unknown-device")


def test_revoke_unsafe_device_id_is_400_invalid(h):
    assert error(h.call("POST", "/devices/a%3A1/revoke")) == "invalid"


def test_revoked_device_stays_in_roster_and_leaves_keygaps(h):
    h.push("u", [op("r1", 1)], ("alice", "a2"))
    h.put_keys("u", 1, ["a1"], excluding=["a2"])
    assert [g["deviceId"] for g in h.call("GET", "/graphs/u/keygaps").json()["gaps"]] == ["a2"]
    h.call("POST", "/devices/a2/revoke")
    assert h.call("GET", "/graphs/u/keygaps").json()["gaps"] == []
    roster = h.call("GET", "/graphs/u/devices").json()["devices"]
    assert [(d["deviceId"], d["revokedAt"]) for d in roster] == [("a1", None), ("a2", T0)]
