"""The store: snapshots, restarts, schema versions and one transaction per request."""

import json

import pytest
from relay_helpers import T0, Harness, device_body, error, op, state_bytes

from simkit.errors import SimkitError
from simkit.protocol.http import Refused
from simkit.relay import SCHEMA_VERSION, NewerStateError, Relay, RelayStateError
from simkit.relay.txn import Transaction

NONCE = {"x-blob-nonce": "bm9uY2Vub25jZTEy"}


def busy(h) -> None:
    """Touch every kind of stored thing."""
    h.push("g:team", [op("r1", 1, k="a", sh="s"), op("r2", 1, e=1), op("r1", 2)])
    h.push("d:bob", [op("r1", 1)], ("bob", "b1"))
    h.put_keys("g:team", 1, ["a1", "a2"], excluding=["b1"])
    h.put_keys("g:team", 1, ["b1"])
    h.call("POST", "/graphs/u/blobs/x", body=b"\x00\x01", query={"policy": "transport"},
           headers=NONCE)  # fmt: skip
    h.call("POST", "/graphs/u/blobs/y", body=b"e", query={"policy": "ephemeral", "ttl": "9"},
           headers=NONCE)  # fmt: skip
    h.call("POST", "/devices/a2/revoke")


def test_snapshot_is_json_data_tagged_with_the_schema_version(h):
    busy(h)
    data = h.relay.snapshot()
    assert json.loads(json.dumps(data)) == data
    assert data["schema"] == SCHEMA_VERSION == 1


def test_restore_gives_the_same_state_and_the_same_answers(h):
    busy(h)
    restored = Relay.restore(h.host, h.clock, json.loads(json.dumps(h.relay.snapshot())))
    assert state_bytes(restored) == state_bytes(h.relay)
    graph, again = h.relay.state.graphs["g:team"], restored.state.graphs["g:team"]
    assert (again.record_bytes, again.blob_bytes) == (graph.record_bytes, graph.blob_bytes)
    original = h.relay

    def answers(relay: Relay) -> list[bytes]:
        h.relay = relay
        return [
            h.pull("g:team").body,
            h.call("GET", "/graphs/g:team/keygaps").body,
            h.call("GET", "/graphs/g:team/devices").body,
            h.push("g:team", [op("r3", 1)]).body,
            h.call("GET", "/graphs/u/blobs/x").body,
        ]

    assert answers(restored) == answers(original)


def test_snapshot_does_not_depend_on_the_order_things_happened_in(h):
    other = Harness()
    other.register("carol", "c1", 4)  # the fixture registers alice, bob, carol
    other.register("bob", "b1", 3)
    other.register("alice", "a2", 2)
    other.register("alice", "a1", 1)
    for harness, order in [(h, ["a", "b"]), (other, ["b", "a"])]:
        for blob in order:
            harness.call("POST", f"/graphs/u/blobs/{blob}", body=b"1", headers=NONCE)
    assert state_bytes(other.relay) == state_bytes(h.relay)


def test_restore_refuses_state_written_by_a_newer_build(h):
    data = h.relay.snapshot() | {"schema": SCHEMA_VERSION + 1}
    with pytest.raises(NewerStateError, match="newer build") as raised:
        Relay.restore(h.host, h.clock, data)
    assert isinstance(raised.value, SimkitError)


@pytest.mark.parametrize(
    "data",
    [None, [], {}, {"schema": "1"}, {"schema": 0}, {"schema": 1},
     {"schema": 1, "devices": [{}], "graphs": []},
     {"schema": 1, "devices": [], "graphs": [{"key": "u:a"}]}],
)  # fmt: skip
def test_restore_refuses_malformed_state_with_a_simkit_error(h, data):
    with pytest.raises(RelayStateError):
        Relay.restore(h.host, h.clock, data)


def test_rate_limit_buckets_are_not_part_of_the_state():
    h = Harness()
    h.register("alice", "a1")
    before = state_bytes(h.relay)
    for _ in range(5):
        h.call("GET", "/devices")
    assert state_bytes(h.relay) == before


# --- one transaction per handler -------------------------------------------------------


def fail_on_call(monkeypatch, owner, name, n):
    """Make ``owner.name`` raise on its n-th call, after the request changed things."""
    original, calls = getattr(owner, name), []

    def wrapper(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            raise RuntimeError(f"{name} failed")
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    return calls


def test_handler_failing_mid_push_rolls_back_to_the_byte(h, monkeypatch):
    busy(h)
    before = state_bytes(h.relay)
    calls = fail_on_call(monkeypatch, Relay, "_next_seq", 3)  # ops 1 and 2 already written
    response = h.push("g:team", [op("r9", 1), op("r1", 9), op("r8", 1)])
    assert len(calls) == 3
    assert (response.status, error(response)) == (500, "internal")
    assert state_bytes(h.relay) == before
    assert h.relay.state.graphs["g:team"].record_bytes == sum(
        len(r.c) for r in h.relay.state.graphs["g:team"].records.values()
    )


def test_handler_failing_mid_revoke_rolls_back_to_the_byte(h, monkeypatch):
    busy(h)
    h.put_keys("u", 1, ["a1"])
    h.put_keys("g:team", 2, ["a1", "b1"])
    before = state_bytes(h.relay)
    fail_on_call(monkeypatch, Transaction, "emit", 1)  # after the wraps were dropped
    assert h.call("POST", "/devices/a1/revoke", ("alice", "a1")).status == 500
    assert state_bytes(h.relay) == before
    assert h.call("GET", "/graphs/u/keys").json()["rotationRequired"] is False


def test_handler_failing_mid_rotation_rolls_back_to_the_byte(h, monkeypatch):
    before = state_bytes(h.relay)
    fail_on_call(monkeypatch, Transaction, "emit", 1)  # wraps, epoch and graph were written
    assert h.put_keys("g:team", 1, ["a1", "a2", "b1"]).status == 500
    assert state_bytes(h.relay) == before
    assert "g:team" not in h.relay.state.graphs


def test_handler_failing_mid_registration_rolls_back_the_device_index(h, monkeypatch):
    before = state_bytes(h.relay)
    fail_on_call(monkeypatch, Transaction, "emit", 1)  # device and index were written
    assert h.call("PUT", "/devices/a3", ("alice", "a3"), device_body(9)).status == 500
    assert state_bytes(h.relay) == before
    assert h.relay.state.member_devices["alice"] == ("a1", "a2")


def test_sweep_failing_mid_way_rolls_back_and_raises(h, monkeypatch):
    for blob in ["b1", "b2"]:
        h.call("POST", f"/graphs/u/blobs/{blob}", body=b"1",
               query={"policy": "ephemeral", "ttl": "1"}, headers=NONCE)  # fmt: skip
    h.clock.advance(1)
    before = state_bytes(h.relay)
    h.events.clear()
    fail_on_call(monkeypatch, Transaction, "emit", 2)  # after the first blob was forgotten
    with pytest.raises(RuntimeError):
        h.relay.sweep()
    assert state_bytes(h.relay) == before
    assert h.events == []


def test_refusal_raised_after_changes_is_undone_and_reports_nothing(h, monkeypatch):
    h.put_keys("g:team", 1, ["a1", "a2"], excluding=["b1"])
    before = state_bytes(h.relay)
    h.events.clear()
    original = Relay._grant_wrap

    def grant_then_refuse(self, *args):
        original(self, *args)
        raise Refused(409, "late", "refused after writing")

    monkeypatch.setattr(Relay, "_grant_wrap", grant_then_refuse)
    assert h.put_keys("g:team", 1, ["b1"]).status == 409
    assert state_bytes(h.relay) == before
    assert h.events == []


def test_on_commit_sees_each_change_and_its_failure_undoes_the_request(h):
    """A driver that keeps the state elsewhere (simkit serve --store) writes on commit;
    if it cannot, the request changed nothing and is answered 500."""
    busy(h)
    commits = []
    h.relay.on_commit = lambda tx: commits.append(list(tx.changed))
    h.pull("g:team")
    assert commits == []  # a read commits nothing
    h.push("g:team", [op("r7", 1)])
    (changed,) = commits
    graph = h.relay.state.graphs["g:team"]
    assert (graph.records, "r7") in changed and (graph, "seq") in changed
    before = state_bytes(h.relay)

    def disk_full(tx):
        raise OSError("disk full")

    h.relay.on_commit = disk_full
    response = h.push("g:team", [op("r8", 1)])
    assert (response.status, error(response)) == (500, "internal")
    assert state_bytes(h.relay) == before and h.kinds()[-1] == "relay.internal-error"


def test_events_are_delivered_only_after_commit(h):
    seen = []

    def hook(event):
        seen.append((event.kind, state_bytes(h.relay)))

    h.relay.on_event = hook
    h.push("u", [op("r1", 1)])
    [(kind, at_delivery)] = seen
    assert kind == "poke"
    assert at_delivery == state_bytes(h.relay)


def test_revoked_at_and_registered_at_come_from_the_injected_clock(h):
    h.clock.advance(1234)
    h.call("POST", "/devices/a2/revoke")
    assert h.relay.state.devices["a2"].revoked_at == T0 + 1234
