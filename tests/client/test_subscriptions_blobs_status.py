"""Filtered subscriptions, blobs, status and events, and multi-device convergence."""

import trio

from simkit.client.blobs import ack_blob, delete_blob, download_blob, upload_blob
from tests.client.world import World, app_config, team, virtual

META = app_config(send_metadata=True, shard_of=lambda r: r["data"].get("shard"))


@virtual
async def test_k_and_sh_are_sent_only_when_the_app_opts_in():
    world = World()
    a1, _ = await team(world, ("alice", "a1"), ("bob", "b1"))
    a1.put("g:team", "n1", "note", {"t": 1})
    await a1.sync()
    row = world.relay.state.graphs["g:team"].records["n1"]
    assert row.k is None and row.sh is None
    a1.config = META
    a1.put("g:team", "n2", "note", {"shard": "s1"})
    await a1.sync()
    row = world.relay.state.graphs["g:team"].records["n2"]
    assert (row.k, row.sh) == ("note", "s1")


@virtual
async def test_a_write_to_a_graph_the_device_does_not_follow_yet_follows_it_and_syncs():
    """Local writes: a write is queued to be pushed, so a device that writes to a graph
    it does not follow yet (its member's, held under a key it was granted) subscribes
    to it first; otherwise no sync run would ever push it."""
    world = World()
    a1 = await world.registered("alice", "a1")
    b1 = await world.registered("bob", "b1")
    assert await a1.bootstrap("g:team")  # b1 is wrapped to, but follows nothing
    assert "g:team" not in b1.graphs()
    b1.put("g:team", "first", "note", {"t": "from b1"})
    assert "g:team" in b1.graphs()
    await world.sync_all()
    assert b1.pending("g:team") == 0
    assert a1.get("g:team", "first")["data"] == {"t": "from b1"}


@virtual
async def test_filtered_subscriptions_have_their_own_cursor_and_see_only_matches():
    world = World()
    a1 = await world.registered("alice", "a1", config=META)
    b1 = await world.registered("bob", "b1")
    assert await a1.bootstrap("g:team")
    key = b1.subscribe("g:team", kinds=["task"])
    a1.put("g:team", "t1", "task", {"x": 1})
    a1.put("g:team", "n1", "note", {"x": 1})
    await world.sync_all()
    assert sorted(b1.records("g:team")) == ["t1"]
    assert b1.store.get("cursor", key) == world.relay.state.graphs["g:team"].seq
    b1.subscribe("g:team")  # add an unfiltered view: it starts from 0
    await world.sync_all()
    assert "n1" in b1.records("g:team")
    assert b1.store.get("cursor", "g:team") >= b1.store.get("cursor", key) - 1


@virtual
async def test_blobs_round_trip_under_each_policy_and_the_sweeper_forgets_them():
    world = World(members=("alice", "bob"))
    a1, b1 = await team(world, ("alice", "a1"), ("bob", "b1"))
    answer = await upload_blob(a1, "g:team", "keep", b"retained bytes")
    assert answer["duplicate"] is False
    assert (await upload_blob(a1, "g:team", "keep", b"other"))["duplicate"] is True
    assert await download_blob(b1, "g:team", "keep") == b"retained bytes"
    await upload_blob(a1, "g:team", "hand", b"once", policy="transport")
    assert await download_blob(b1, "g:team", "hand") == b"once"
    assert await ack_blob(b1, "g:team", "hand") is True  # alice's upload counts as a receipt
    assert await download_blob(b1, "g:team", "hand") is None
    await upload_blob(a1, "g:team", "brief", b"soon gone", policy="ephemeral", ttl_ms=1_000)
    await trio.sleep(2)
    world.relay.sweep()
    assert await download_blob(b1, "g:team", "brief") is None
    assert await delete_blob(a1, "g:team", "keep")
    assert await download_blob(b1, "g:team", "keep") is None


@virtual
async def test_sync_done_after_each_run_and_status_names_every_field():
    world = World()
    a1, b1 = await team(world, ("alice", "a1"), ("bob", "b1"))
    runs = len([e for e in b1.events if e.kind == "sync.done"])
    a1.put("g:team", "n1", "note", {"t": 1})
    await a1.sync()
    await b1.sync()
    done = [e for e in b1.events if e.kind == "sync.done"]
    assert len(done) == runs + 1 and done[-1].fields["pulled"] >= 1
    assert set(b1.status) == {"lastError", "rejected", "linking", "graphs"}
    assert b1.status["graphs"]["g:team"]["log"]["state"] == "ok"


@virtual
async def test_three_devices_editing_one_record_concurrently_converge_on_the_lww_winner():
    world = World()
    devices = await team(world, ("alice", "a1"), ("bob", "b1"), ("carol", "c1"))
    for round_ in range(20):
        for i, device in enumerate(devices):
            device.clock.offset_ms = (round_ * 7 + i * 13) % 50
            device.put("g:team", "shared", "note", {"by": device.device_id, "round": round_})
        async with trio.open_nursery() as nursery:
            for device in devices:
                nursery.start_soon(device.sync)
        await trio.sleep(0.01)
    await world.sync_all()
    held = [d.get("g:team", "shared") for d in devices]
    stored = world.relay.state.graphs["g:team"].records["shared"]
    assert held[0] == held[1] == held[2]
    assert held[0]["at"] == stored.rev
    assert all(d.pending() == 0 for d in devices)
    assert all(d.graph_status("g:team").log == "ok" for d in devices)


@virtual
async def test_an_idle_sync_run_is_one_pull_and_keys_are_rechecked_every_30_s():
    from simkit.client import AppConfig

    world = World()
    a1 = await world.registered("alice", "a1", config=AppConfig())
    assert await a1.bootstrap("g:team")
    await a1.sync()
    a1.transport.sent.clear()
    await a1.sync()
    assert [(m, p.rsplit("/", 1)[-1]) for m, p, _ in a1.transport.sent] == [("GET", "pull")]
    await trio.sleep(31)
    a1.transport.sent.clear()
    await a1.sync()
    assert {p.rsplit("/", 1)[-1] for _, p, _ in a1.transport.sent} == {"keys", "keygaps", "pull"}


def test_checkpoints_alone_never_cause_another_round_of_checkpoints():
    from simkit.client.logverify import LogState, due_checkpoint, fold

    log = LogState.start("g:team", 0)
    entries = [{"seq": s, "recordId": f"ck{s}", "rev": 1} for s in range(1, 130)]
    only_checkpoints = fold(log, entries, 129, lambda r: 1, lambda r: None, lambda r: True)
    assert sorted(only_checkpoints.heads) == ["128", "64"]
    assert due_checkpoint(only_checkpoints, "a1", 2) is None
    with_app_write = fold(log, entries, 129, lambda r: 1, lambda r: None, lambda r: r != "ck100")
    assert due_checkpoint(with_app_write, "a1", 2) == 128


def test_a_large_group_publishes_each_boundary_from_about_eight_devices_in_turn():
    from simkit.client.logverify import PUBLISHERS_PER_BOUNDARY, takes_turn

    devices = [f"d{i}" for i in range(400)]
    assert all(takes_turn(d, 64, PUBLISHERS_PER_BOUNDARY) for d in devices)  # small: everyone
    turns = {b: {d for d in devices if takes_turn(d, b, len(devices))} for b in (64, 128, 192)}
    for publishers in turns.values():
        assert 1 <= len(publishers) <= 3 * PUBLISHERS_PER_BOUNDARY
    assert turns[64] != turns[128] != turns[192]  # the turn moves from boundary to boundary
    mean = (
        sum(sum(takes_turn(d, b, len(devices)) for d in devices) for b in range(64, 64 * 201, 64))
        / 200
    )
    assert 6 <= mean <= 10
