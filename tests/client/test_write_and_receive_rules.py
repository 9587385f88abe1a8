"""Client rules 1-3: stamping, tombstones, the receive path, local last-write-wins."""

import pytest

from simkit.client import AppConfig, DeviceError, Registry
from tests.client.world import EPOCH_MS, World, app_config, forge, team, unavailable, virtual


@virtual
async def test_rule1_stamp_is_max_of_now_last_plus_one_and_prior_rev_plus_one():
    world = World()
    (a1,) = await team(world, ("alice", "a1"))
    first = a1.put("g:team", "n1", "note", {"v": 1})
    assert first["at"] == EPOCH_MS  # now
    second = a1.put("g:team", "n2", "note", {"v": 1})
    assert second["at"] == first["at"] + 1  # last + 1: the clock has not moved
    # prior rev + 1: a record written far in the future is overwritten above it
    a1.store.put("records:g:team", "n3", {**second, "id": "n3", "at": EPOCH_MS + 10_000})
    third = a1.put("g:team", "n3", "note", {"v": 2})
    assert third["at"] == EPOCH_MS + 10_001


@virtual
async def test_rule1_the_overwritten_record_is_read_before_stamping_on_every_device():
    world = World()
    a1, b1 = await team(world, ("alice", "a1"), ("bob", "b1"))
    b1.clock.offset_ms = -60_000  # bob's clock is a minute behind
    a1.put("g:team", "n1", "note", {"by": "alice"})
    await world.sync_all()
    edited = b1.put("g:team", "n1", "note", {"by": "bob"})
    assert edited["at"] == a1.get("g:team", "n1")["at"] + 1
    await world.sync_all()
    assert a1.get("g:team", "n1")["data"] == {"by": "bob"}


@virtual
async def test_rule1_tombstone_is_an_empty_husk_that_keeps_syncing():
    world = World()
    a1, b1 = await team(world, ("alice", "a1"), ("bob", "b1"))
    a1.put("g:team", "n1", "note", {"t": "x"})
    await world.sync_all()
    tomb = a1.delete("g:team", "n1")
    assert tomb["deleted"] is True and tomb["data"] == {}
    await world.sync_all()
    assert b1.get("g:team", "n1") == tomb
    assert "n1" in world.relay.state.graphs["g:team"].records  # the relay never deletes a row


@virtual
async def test_write_refused_by_the_application_schema_is_not_queued():
    world = World()
    config = app_config(registry=Registry({"note": lambda d: "t" in d}, default=None))
    a1 = await world.registered("alice", "a1", config=config)
    await a1.bootstrap("g:team")
    with pytest.raises(DeviceError, match="refuses"):
        a1.put("g:team", "n1", "note", {"other": 1})
    assert a1.pending() == 0


def _record(by, at, record_id="x1", **extra):
    return {"id": record_id, "kind": "note", "data": {"t": "forged"}, "at": at, "by": by, **extra}


@pytest.mark.parametrize(
    ("reason", "forgery"),
    [
        ("shape", lambda a1, a2: dict(record=_record("alice", EPOCH_MS), slot="other")),
        ("unknown-device", lambda a1, a2: dict(record=_record("alice", EPOCH_MS), d="ghost")),
        (
            "bad-signature",
            lambda a1, a2: dict(record=_record("alice", EPOCH_MS), sign_with=a2.keys),
        ),
        ("wrong-author", lambda a1, a2: dict(record=_record("bob", EPOCH_MS))),
        ("decrypt", lambda a1, a2: dict(record=_record("alice", EPOCH_MS), key=bytes(32))),
        ("shape", lambda a1, a2: dict(record=_record("alice", EPOCH_MS), rev=EPOCH_MS - 5)),
    ],
)
@virtual
async def test_rule2_a_failing_record_is_skipped_with_its_reason_and_the_sync_goes_on(
    reason, forgery
):
    world = World()
    a1, a2, b1 = await team(world, ("alice", "a1"), ("alice", "a2"), ("bob", "b1"))
    forge(a1, "g:team", **forgery(a1, a2))
    a1.put("g:team", "after", "note", {"t": "honest"})
    await world.sync_all()
    rejected = [e.fields for e in b1.events if e.kind == "record.rejected"]
    assert [r["reason"] for r in rejected] == [reason]
    assert b1.get("g:team", "after")["data"] == {"t": "honest"}  # never wedges the sync
    assert b1.get("g:team", "x1") is None and b1.get("g:team", "other") is None
    assert b1.status["rejected"][0]["reason"] == reason


@virtual
async def test_rule2_schema_failure_is_rejected_but_tombstones_are_exempt():
    world = World()
    strict = app_config(registry=Registry({"note": lambda d: "t" in d}, default=None))
    a1 = await world.registered("alice", "a1")
    b1 = await world.registered("bob", "b1", config=strict)
    await a1.bootstrap("g:team")
    b1.subscribe("g:team")
    a1.put("g:team", "bad", "note", {"no-t": 1})
    a1.put("g:team", "good", "note", {"t": 1})
    await world.sync_all()
    assert [e.fields["reason"] for e in b1.events if e.kind == "record.rejected"] == ["schema"]
    a1.delete("g:team", "bad")
    await world.sync_all()
    assert b1.get("g:team", "bad")["deleted"] is True


@virtual
async def test_rule2_a_device_revoked_before_the_record_was_written_is_refused():
    world = World()
    a1, a2, b1 = await team(world, ("alice", "a1"), ("alice", "a2"), ("bob", "b1"))
    a2.put("g:team", "before", "note", {"t": "written while active"})
    await world.sync_all()
    await a1.revoke("a2")
    revoked_at = world.relay.state.devices["a2"].revoked_at
    # a record claiming a2 wrote it after its revocation, carried by a1
    forge(a1, "g:team", _record("alice", revoked_at + 1), d="a2", sign_with=a2.keys)
    await world.sync_all()
    reasons = [e.fields["reason"] for e in b1.events if e.kind == "record.rejected"]
    assert reasons == ["revoked-device"]
    assert b1.get("g:team", "before")["data"] == {"t": "written while active"}


@virtual
async def test_rule2_a_roster_fetched_before_the_record_was_written_is_fetched_again():
    """F12: b1 fetched the roster for a2's first record; a2 is revoked and the rotation
    that would change the epoch has not come yet (the revoker's answer was lost, say).
    A record claiming a2 wrote it after the revocation is newer than b1's roster, so
    b1 fetches the roster again and refuses it; it does not trust the cached one."""
    world = World()
    caching = {"b1": AppConfig(recheck_s=30.0)}  # b1 keeps its roster for 30 s
    a1, a2, b1 = await team(world, ("alice", "a1"), ("alice", "a2"), ("bob", "b1"), configs=caching)
    a2.put("g:team", "before", "note", {"t": "written while active"})
    await world.sync_all()
    assert b1.roster("g:team")["a2"]["revokedAt"] is None  # cached, and fresh by age
    assert (await a1.request("POST", "/devices/a2/revoke")).status == 200  # no rotation
    revoked_at = world.relay.state.devices["a2"].revoked_at
    forge(a1, "g:team", _record("alice", revoked_at + 1), d="a2", sign_with=a2.keys)
    await world.sync_all()
    reasons = [e.fields["reason"] for e in b1.events if e.kind == "record.rejected"]
    assert reasons == ["revoked-device"]
    assert b1.get("g:team", "x1") is None


@virtual
async def test_rule2_a_roster_vouches_on_the_relays_clock_from_the_last_push_answer():
    """F21: b1's clock runs two minutes ahead, too little for the relay to refuse its
    writes, so clock repair never corrects it. b1 fetched the roster before a2's
    revocation; on b1's own clock that fetch came after a record claiming a2 wrote it
    just after the revocation. On the relay's clock (b1's last push answer's ``now``)
    it came before, so b1 fetches the roster again and refuses the record."""
    world = World()
    caching = {"b1": AppConfig(recheck_s=30.0)}  # b1 keeps its roster for 30 s
    a1, a2, b1 = await team(world, ("alice", "a1"), ("alice", "a2"), ("bob", "b1"), configs=caching)
    b1.clock.offset_ms = 120_000
    b1.put("g:team", "b", "note", {"t": 1})  # pushed: b1 learns the relay's clock
    a2.put("g:team", "before", "note", {"t": "written while active"})
    await world.sync_all()
    assert b1.roster("g:team")["a2"]["revokedAt"] is None  # cached, and fresh by age
    assert b1.relay_offset is not None and b1.relay_offset >= 120_000
    assert (await a1.request("POST", "/devices/a2/revoke")).status == 200  # no rotation
    revoked_at = world.relay.state.devices["a2"].revoked_at
    forge(a1, "g:team", _record("alice", revoked_at + 1), d="a2", sign_with=a2.keys)
    await world.sync_all()
    reasons = [e.fields["reason"] for e in b1.events if e.kind == "record.rejected"]
    assert reasons == ["revoked-device"]
    assert b1.get("g:team", "x1") is None


@virtual
async def test_rule2_and_6_a_signer_newer_than_the_cached_roster_defers_when_the_roster_is_down():
    """F17 (found by the device model): a record signed by a device linked after b1
    cached its roster is looked up in the roster again; when that read fails, b1 used
    to refuse the record for good on its stale roster. Client rule 6 defers the batch."""
    world = World()
    caching = {"b1": AppConfig(recheck_s=30.0)}  # b1 keeps its roster for 30 s
    a1, b1 = await team(world, ("alice", "a1"), ("bob", "b1"), configs=caching)
    a1.put("g:team", "n1", "note", {"t": 1})
    b1.put("g:team", "b", "note", {"t": 1})  # its push answer tells b1 the relay's clock
    await world.sync_all()  # b1 fetched the roster to vouch for n1, and caches it
    a2 = await world.registered("alice", "a2")  # not in b1's cached roster
    # stamped before b1 fetched its roster, so the cache is fresh enough to vouch for it
    forge(a1, "g:team", _record("alice", EPOCH_MS - 1_000), d="a2", sign_with=a2.keys)
    b1.transport.fail = lambda r: unavailable(400) if r.path.endswith("/devices") else None
    cursor = b1.store.get("cursor", "g:team")
    await b1.sync()
    assert not [e for e in b1.events if e.kind == "record.rejected"]
    assert b1.get("g:team", "x1") is None and b1.store.get("cursor", "g:team") == cursor
    b1.transport.fail = None
    await b1.sync()
    assert b1.get("g:team", "x1") is not None


@virtual
async def test_rule2_unknown_record_members_are_signed_then_ignored():
    world = World()
    a1, b1 = await team(world, ("alice", "a1"), ("bob", "b1"))
    forge(a1, "g:team", _record("alice", EPOCH_MS, futureField={"x": 1}))
    await world.sync_all()
    held = b1.get("g:team", "x1")
    assert held is not None and "futureField" not in held  # only the parsed record is kept
    assert not [e for e in b1.events if e.kind == "record.rejected"]


@virtual
async def test_rule2_opting_out_of_authorship_checks_accepts_unsigned_authorship():
    world = World()
    a1 = await world.registered("alice", "a1")
    b1 = await world.registered("bob", "b1", config=app_config(verify_signatures=False))
    await a1.bootstrap("g:team")
    b1.subscribe("g:team")
    await world.sync_all()
    forge(a1, "g:team", _record("alice", EPOCH_MS), d="ghost")
    await world.sync_all()
    assert b1.get("g:team", "x1") is not None


@virtual
async def test_rule3_local_lww_takes_the_relay_copy_when_local_at_is_not_greater():
    world = World()
    a1, b1 = await team(world, ("alice", "a1"), ("bob", "b1"))
    b1.clock.offset_ms = 5_000
    a1.put("g:team", "n1", "note", {"from": "alice"})
    b1.put("g:team", "n1", "note", {"from": "bob"})  # later stamp: bob wins
    await world.sync_all()
    assert a1.get("g:team", "n1")["data"] == {"from": "bob"}
    assert b1.get("g:team", "n1")["data"] == {"from": "bob"}
    assert a1.pending() == b1.pending() == 0


@virtual
async def test_rule3_equal_revisions_converge_on_the_first_the_relay_kept():
    world = World()
    a1, b1 = await team(world, ("alice", "a1"), ("bob", "b1"))
    a1.put("g:team", "n1", "note", {"from": "alice"})
    b1.put("g:team", "n1", "note", {"from": "bob"})
    assert a1.get("g:team", "n1")["at"] == b1.get("g:team", "n1")["at"]
    await a1.sync()  # alice's push reaches the relay first
    await world.sync_all()
    assert a1.get("g:team", "n1")["data"] == b1.get("g:team", "n1")["data"] == {"from": "alice"}
