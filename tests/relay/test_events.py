"""The event stream: a content-free poke per written graph, typed events, nothing on reads."""

import attrs
import pytest
from relay_helpers import op

from simkit.relay import DeviceRegister, DeviceRevoke, KeysGrant, Poke

NONCE = {"x-blob-nonce": "bm9uY2Vub25jZTEy"}


def _upload(h, blob="b1", **query):
    return h.call("POST", f"/graphs/g:team/blobs/{blob}", body=b"x", query=query, headers=NONCE)


WRITES = {
    "push": lambda h: h.push("g:team", [op("r1", 1)]),
    "keys-rotate": lambda h: h.put_keys("g:team", 1, ["a1", "a2", "b1"]),
    "keys-grant": lambda h: h.put_keys("g:team", 1, ["b1"]),
    "keys-discard": lambda h: h.call("DELETE", "/graphs/g:team/keys/1"),
    "blob-upload": lambda h: _upload(h, "b2"),
    "blob-ack": lambda h: h.call("POST", "/graphs/g:team/blobs/t1/ack", ("bob", "b1")),
    "blob-delete": lambda h: h.call("DELETE", "/graphs/g:team/blobs/b1"),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES)
def test_every_write_pokes_its_graph_after_commit(h, write):
    h.put_keys("g:team", 1, ["a1", "a2"], excluding=["b1"])
    _upload(h)
    _upload(h, "t1", policy="transport")
    h.events.clear()
    assert write(h).status == 200
    assert h.events[-1] == Poke("g:team")
    assert all(event.kind != "poke" or event == Poke("g:team") for event in h.events)


def test_a_poke_carries_the_storage_key_and_nothing_else(h):
    h.push("d:bob", [op("r1", 1)])
    assert h.events == [Poke("d:alice:bob")]
    assert [field.name for field in attrs.fields(Poke)] == ["graph"]


def test_reads_and_refusals_emit_nothing(h):
    h.push("g:team", [op("r1", 1)])
    h.events.clear()
    for path in ["/devices", "/graphs/g:team/pull", "/graphs/g:team/log", "/graphs/g:team/keys",
                 "/graphs/g:team/devices", "/graphs/g:team/keygaps"]:  # fmt: skip
        assert h.call("GET", path).status == 200
    assert h.push("g:team", [op("r1", 1)], ("carol", "c1")).status == 403
    assert h.events == []


def test_device_events_name_member_and_devices(h):
    h.register("alice", "a3", 9)
    h.put_keys("u", 1, ["a1", "a2", "a3"])
    h.events.clear()
    h.call("POST", "/devices/a3/revoke", ("alice", "a2"))
    assert h.events[0] == DeviceRevoke("alice", "a3", "a2", ("u:alice",))
    assert DeviceRegister.kind == "device.register"


def test_keys_grant_event_names_only_the_devices_granted(h):
    h.put_keys("g:team", 1, ["a1"], excluding=["a2", "b1"])
    h.events.clear()
    h.put_keys("g:team", 1, ["a1", "b1"], ("bob", "b1"))
    assert h.events[0] == KeysGrant("g:team", 1, "bob", "b1", ("b1",))


def test_discarding_a_wrap_emits_keys_discard_naming_graph_epoch_and_device():
    from relay_helpers import Harness

    from simkit.relay import KeysDiscard

    h = Harness()
    h.register("alice", "a1")
    h.put_keys("u", 1, ["a1"])
    h.events.clear()
    assert h.call("DELETE", "/graphs/u/keys/1").json()["discarded"] is True
    assert [e for e in h.events if isinstance(e, KeysDiscard)] == [KeysDiscard("u:alice", 1, "a1")]
