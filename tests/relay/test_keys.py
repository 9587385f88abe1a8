"""Keys: the epoch table, grants, discards, roster and key gaps (spec: Keys)."""

import pytest
from relay_helpers import Harness, error, jwk, op, state_bytes

from simkit.relay import GraphRotate


def keys(h, gid="g:team", who=("alice", "a1")):
    return h.call("GET", f"/graphs/{gid}/keys", who).json()


def test_keys_init_epoch_1_covering_every_eligible_device(h):
    response = h.put_keys("g:team", 1, ["a1", "a2", "b1"])
    assert response.json() == {"ok": True, "latestEpoch": 1}
    assert keys(h) == {"latestEpoch": 1, "rotationRequired": False,
                       "wraps": [{"epoch": 1, "wrapped": "w1-a1"}]}  # fmt: skip
    assert h.events == [GraphRotate("g:team", 1, "alice", "a1", ()), *h.events[1:]]
    assert h.kinds() == ["graph.rotate", "poke"]


def test_keys_init_reports_exclusions_on_graph_rotate(h):
    h.put_keys("g:team", 1, ["a1"], excluding=["b1", "a2"])
    assert h.events[0] == GraphRotate("g:team", 1, "alice", "a1", ("b1", "a2"))


def test_keys_rotation_mints_latest_plus_1_and_keeps_old_epochs(h):
    h.put_keys("g:team", 1, ["a1", "a2", "b1"])
    assert h.put_keys("g:team", 2, ["a1", "a2", "b1"], ("bob", "b1")).json()["latestEpoch"] == 2
    assert [w["epoch"] for w in keys(h)["wraps"]] == [1, 2]


@pytest.mark.parametrize("epoch", [1, 2])
def test_keys_new_epoch_needs_rotate_capability_403_not_permitted(h, epoch):
    if epoch == 2:
        h.put_keys("g:team", 1, ["a1", "a2", "b1"])
    h.host.set_capabilities("bob", "team", ["write"])
    response = h.put_keys("g:team", epoch, ["a1", "a2", "b1"], ("bob", "b1"))
    assert response.status == 403
    assert response.json() | {"message": ""} == {"error": "not-permitted", "message": "",
                                                  "need": "rotate"}  # fmt: skip


@pytest.mark.parametrize("epoch", [3, 7])
def test_keys_epoch_above_latest_plus_1_is_409_epoch_gap(h, epoch):
    h.put_keys("g:team", 1, ["a1", "a2", "b1"])
    response = h.put_keys("g:team", epoch, ["a1", "a2", "b1"])
    assert response.status == 409
    assert response.json() | {"message": ""} == {"error": "epoch-gap", "message": "",
                                                  "latestEpoch": 1}  # fmt: skip


def test_keys_epoch_gap_is_checked_before_rotate(h):
    h.host.set_capabilities("bob", "team", [])
    assert error(h.put_keys("g:team", 2, ["a1", "a2", "b1"], ("bob", "b1"))) == "epoch-gap"


def test_keys_incomplete_rotation_400_names_the_missing_devices(h):
    response = h.put_keys("g:team", 1, ["a2"])
    assert response.status == 400
    assert response.json() == {
        "error": "incomplete-rotation",
        "message": "the new epoch reaches neither wraps nor excluding for 2 device(s)",
        "missing": ["a1", "b1"],
    }
    assert "g:team" not in h.relay.state.graphs


def test_keys_completeness_covers_current_members_only(h):
    h.push("g:team", [op("r1", 1)], ("bob", "b1"))
    h.host.leave("team", "bob")
    assert h.put_keys("g:team", 1, ["a1", "a2"]).status == 200  # departed bob is not owed


def test_keys_excluding_a_wrapped_device_is_400_invalid_exclusion(h):
    response = h.put_keys("g:team", 1, ["a1", "a2", "b1"], excluding=["b1"])
    assert (response.status, response.json()["devices"]) == (400, ["b1"])
    assert error(response) == "invalid-exclusion"


@pytest.mark.parametrize("stranger", ["c1", "zz", "a2"])
def test_keys_excluding_an_ineligible_device_is_400_invalid_exclusion(h, stranger):
    h.call("POST", "/devices/a2/revoke")  # a2 is no longer eligible
    response = h.put_keys("g:team", 1, ["a1", "b1"], excluding=[stranger])
    assert (error(response), response.json()["devices"]) == ("invalid-exclusion", [stranger])


@pytest.mark.parametrize("stranger", ["c1", "zz", "a2"])
def test_keys_wrap_to_a_non_member_device_is_400_not_a_member_device(h, stranger):
    h.call("POST", "/devices/a2/revoke")
    response = h.put_keys("g:team", 1, ["a1", "b1", stranger])
    assert (response.status, error(response)) == (400, "not-a-member-device")
    assert response.json()["devices"] == [stranger]


def test_keys_inactive_member_is_not_eligible(h):
    h.host.deactivate("bob")
    assert h.put_keys("g:team", 1, ["a1", "a2"]).status == 200
    assert error(h.put_keys("g:team", 1, ["b1"])) == "not-a-member-device"


def test_keys_eligibility_for_personal_and_pairwise_graphs(h):
    assert h.put_keys("u", 1, ["a1"]).json()["missing"] == ["a2"]
    assert h.put_keys("d:carol", 1, ["a1"]).json()["missing"] == ["a2", "c1"]
    assert error(h.put_keys("u", 1, ["a1", "a2", "b1"])) == "not-a-member-device"


def test_keys_grant_fills_a_gap_without_rotate(h):
    h.put_keys("g:team", 1, ["a1", "a2"], excluding=["b1"])
    h.host.set_capabilities("alice", "team", [])
    h.events.clear()
    assert h.put_keys("g:team", 1, ["b1"]).json() == {"ok": True, "latestEpoch": 1}
    assert keys(h, who=("bob", "b1"))["wraps"] == [{"epoch": 1, "wrapped": "w1-b1"}]
    assert h.kinds() == ["keys.grant", "poke"]
    assert h.events[0].devices == ("b1",)


def test_keys_grant_never_overwrites_an_existing_wrap(h):
    h.put_keys("g:team", 1, ["a1", "a2", "b1"])
    h.events.clear()
    before = state_bytes(h.relay)
    body = {"epoch": 1, "wraps": [{"deviceId": "a1", "wrapped": "other"}]}
    assert h.call("POST", "/graphs/g:team/keys", json_body=body).status == 200
    assert keys(h)["wraps"] == [{"epoch": 1, "wrapped": "w1-a1"}]
    assert state_bytes(h.relay) == before
    assert h.events == []  # nothing changed, nothing to poke


def test_keys_concurrent_second_create_of_epoch_1_is_200_and_a_grant(h):
    h.put_keys("g:team", 1, ["a1", "a2"], excluding=["b1"])
    response = h.put_keys("g:team", 1, ["a1", "b1"], ("bob", "b1"))  # bob's racing create
    assert response.json() == {"ok": True, "latestEpoch": 1}
    assert keys(h)["wraps"] == [{"epoch": 1, "wrapped": "w1-a1"}]  # alice's wrap kept
    assert keys(h, who=("bob", "b1"))["wraps"] == [{"epoch": 1, "wrapped": "w1-b1"}]


def test_keys_grant_to_a_non_member_device_is_400_not_a_member_device(h):
    h.put_keys("g:team", 1, ["a1", "a2", "b1"])
    assert error(h.put_keys("g:team", 1, ["c1"])) == "not-a-member-device"


def test_keys_new_epoch_clears_rotation_required(h):
    h.put_keys("g:team", 1, ["a1", "a2", "b1"])
    h.call("POST", "/devices/a2/revoke")
    assert keys(h)["rotationRequired"] is True
    h.put_keys("g:team", 1, ["a1"])  # a grant does not clear it
    assert keys(h)["rotationRequired"] is True
    h.put_keys("g:team", 2, ["a1", "b1"])
    assert keys(h)["rotationRequired"] is False


def test_keys_get_serves_only_the_calling_devices_wraps(h):
    h.put_keys("g:team", 1, ["a1", "a2", "b1"])
    h.put_keys("g:team", 2, ["a1", "b1"], excluding=["a2"])
    assert keys(h, who=("alice", "a2"))["wraps"] == [{"epoch": 1, "wrapped": "w1-a2"}]


def test_keys_delete_discards_only_the_callers_own_wrap(h):
    h.put_keys("g:team", 1, ["a1", "a2", "b1"])
    response = h.call("DELETE", "/graphs/g:team/keys/1")
    assert response.json() == {"ok": True, "discarded": True}
    assert keys(h)["wraps"] == []
    assert keys(h, who=("alice", "a2"))["wraps"] == [{"epoch": 1, "wrapped": "w1-a2"}]
    gaps = h.call("GET", "/graphs/g:team/keygaps").json()["gaps"]
    assert [(g["deviceId"], g["epochs"]) for g in gaps] == [("a1", [1])]
    assert h.call("DELETE", "/graphs/g:team/keys/1").json() == {"ok": True, "discarded": False}
    assert h.call("DELETE", "/graphs/g:team/keys/9").json()["discarded"] is False


@pytest.mark.parametrize("epoch", ["0", "01", "x", "-1", "1.0", "99999999999999999"])
def test_keys_delete_malformed_epoch_is_400_invalid(h, epoch):
    assert error(h.call("DELETE", f"/graphs/u/keys/{epoch}")) == "invalid"


def test_roster_serves_current_members_revoked_devices_and_departed_pushers(h):
    h.push("g:team", [op("r1", 1)], ("bob", "b1"))
    h.host.leave("team", "bob")
    h.host.join("team", "carol")
    h.call("POST", "/devices/a2/revoke")
    devices = h.call("GET", "/graphs/g:team/devices").json()["devices"]
    assert [(d["deviceId"], d["revokedAt"] is None) for d in devices] == [
        ("a1", True), ("a2", False), ("b1", True), ("c1", True)
    ]  # fmt: skip
    assert devices[2] == {"deviceId": "b1", "memberId": "bob", "pubJwk": jwk(3),
                          "sigJwk": jwk(103), "selfSig": None, "revokedAt": None}  # fmt: skip


def test_roster_leaves_out_departed_members_who_never_pushed(h):
    h.host.leave("team", "bob")
    devices = h.call("GET", "/graphs/g:team/devices").json()["devices"]
    assert [d["deviceId"] for d in devices] == ["a1", "a2"]


def test_keygaps_lists_missing_epochs_with_public_keys_from_the_roster(h):
    h.put_keys("g:team", 1, ["a1", "a2"], excluding=["b1"])
    h.put_keys("g:team", 2, ["a1", "b1"], excluding=["a2"])
    h.register("alice", "a3", 9, selfSig="c2ln")
    assert h.call("GET", "/graphs/g:team/keygaps", ("bob", "b1")).json() == {
        "latestEpoch": 2,
        "gaps": [
            {"deviceId": "a2", "memberId": "alice", "pubJwk": jwk(2), "sigJwk": jwk(102),
             "selfSig": None, "epochs": [2]},
            {"deviceId": "a3", "memberId": "alice", "pubJwk": jwk(9), "sigJwk": jwk(109),
             "selfSig": "c2ln", "epochs": [1, 2]},
            {"deviceId": "b1", "memberId": "bob", "pubJwk": jwk(3), "sigJwk": jwk(103),
             "selfSig": None, "epochs": [1]},
        ],
    }  # fmt: skip


def test_keygaps_before_any_key_is_empty(h):
    assert h.call("GET", "/graphs/u/keygaps").json() == {"latestEpoch": 0, "gaps": []}


BAD_KEY_BODIES = {
    "epoch-0": {"epoch": 0, "wraps": []},
    "epoch-string": {"epoch": "1", "wraps": []},
    "missing-wraps": {"epoch": 1},
    "wrap-empty": {"epoch": 1, "wraps": [{"deviceId": "a1", "wrapped": ""}]},
    "wrap-twice": {"epoch": 1, "wraps": [{"deviceId": "a1", "wrapped": "w"}] * 2},
    "unsafe-device": {"epoch": 1, "wraps": [{"deviceId": "a:1", "wrapped": "w"}]},
    "excluding-twice": {"epoch": 1, "wraps": [], "excluding": ["a1", "a1"]},
    "excluding-null": {"epoch": 1, "wraps": [], "excluding": None},
}


@pytest.mark.parametrize("body", BAD_KEY_BODIES.values(), ids=BAD_KEY_BODIES)
def test_keys_body_schema_is_400_invalid(h, body):
    assert error(h.call("POST", "/graphs/u/keys", json_body=body)) == "invalid"


def test_versioning_3_put_keys_drops_members_it_does_not_know(h):
    wraps = [{"deviceId": "a1", "wrapped": "w", "note": 1}, {"deviceId": "a2", "wrapped": "v"}]
    body = {"epoch": 1, "wraps": wraps, "x": 1}
    assert h.call("POST", "/graphs/u/keys", json_body=body).json() == {"ok": True, "latestEpoch": 1}
    assert h.call("GET", "/graphs/u/keys").json()["wraps"] == [{"epoch": 1, "wrapped": "w"}]


def test_keys_events_name_the_storage_key():
    h = Harness()
    h.register("alice", "a1")
    h.register("bob", "b1", 2)
    h.put_keys("d:bob", 1, ["a1", "b1"])
    assert h.events[-2] == GraphRotate("d:alice:bob", 1, "alice", "a1", ())
