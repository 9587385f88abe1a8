"""Who rotates after a revocation whose revoker did not (docs/client.md, "Who rotates"):
the spec sets ``rotationRequired`` and leaves the rest open, so these test simkit's own
choice, which the models accept whatever it is: turns by rank among the roster's
active devices, and in approve mode a gate on the holders until the last resort."""

import trio

from simkit.client import AppConfig
from simkit.client.approval import APPROVE
from simkit.relay.older import OlderRelay
from tests.client.world import RecordingTransport, World, app_config, team, virtual

TURN_S = 30


async def _revoked_without_rotation(world, approve: bool):
    """a1, a2 (alice) and b1 (bob) hold epoch 1; a2 is revoked by a raw request (so
    nobody rotated), and only a1 takes turns; a1 sees the flag now."""
    others = app_config(rotate_after_s=None)
    a1, _, _ = await team(
        world, ("alice", "a1"), ("alice", "a2"), ("bob", "b1"),
        configs={"a2": others, "b1": others},
    )  # fmt: skip
    if approve:
        a1.config = app_config(approval_mode=APPROVE)  # it never approved b1
    assert (await a1.request("POST", "/devices/a2/revoke")).status == 200
    await a1.sync("g:team")
    assert world.relay.state.graphs["g:team"].rotation_required
    return a1


@virtual
async def test_who_rotates_a_turn_comes_by_rank_among_the_active_devices_only():
    """a1 ranks first of the active devices (a1, b1; the revoked a2 does not count), so
    its turn comes once the flag has stood one turn."""
    world = World()
    a1 = await _revoked_without_rotation(world, approve=False)
    await trio.sleep(TURN_S - 1)
    await a1.sync("g:team")
    assert world.relay.state.graphs["g:team"].latest_epoch == 1  # not its turn yet
    await trio.sleep(2)
    await a1.sync("g:team")
    assert world.relay.state.graphs["g:team"].latest_epoch == 2


@virtual
async def test_who_rotates_approve_mode_waits_for_the_last_resort_past_an_unapproved_holder():
    """In approve mode a1's turn passes while b1, which holds the latest key, is not
    approved by it (rotating would strand b1, F5); once every device's turn has passed
    (one turn more than the two active devices) it rotates anyway, excluding b1 (F9)."""
    world = World()
    a1 = await _revoked_without_rotation(world, approve=True)
    graph = world.relay.state.graphs["g:team"]
    await trio.sleep(TURN_S + 1)
    await a1.sync("g:team")
    assert graph.latest_epoch == 1  # its turn, but the gate blocks a holder
    await trio.sleep(TURN_S * 2)
    await a1.sync("g:team")
    assert graph.latest_epoch == 2
    assert "b1" not in graph.wraps[2] and "a1" in graph.wraps[2]


@virtual
async def test_who_rotates_an_older_relay_refusing_excluding_is_asked_again_after_recheck_s():
    """Versioning rule 3: an older relay drops ``excluding`` and refuses the rotation as
    incomplete, naming only devices the post excluded: asking again at once would change
    nothing, so the device waits ``recheck_s`` before its next try (each one is a roster
    read and a key post), and then tries again."""
    world = World()
    world.relay = OlderRelay(world.host, world.relay_clock.now_ms)
    others = app_config(rotate_after_s=None)
    a1, _, _ = await team(
        world, ("alice", "a1"), ("alice", "a2"), ("carol", "c1"),
        configs={"a2": others, "c1": others},
    )  # fmt: skip
    a1.config = AppConfig(approval_mode=APPROVE, recheck_s=TURN_S)  # c1 never approved
    assert (await a1.request("POST", "/devices/a2/revoke")).status == 200
    await a1.sync("g:team", full=True)
    await trio.sleep(TURN_S * 3 + 1)  # past the last resort (two active devices)
    await a1.sync("g:team")
    posts = a1.transport.count("POST", "/keys")
    assert posts >= 1 and world.relay.state.graphs["g:team"].latest_epoch == 1
    await a1.sync("g:team")  # at once: not asked again
    await trio.sleep(TURN_S - 1)
    await a1.sync("g:team")  # within recheck_s: not yet
    assert a1.transport.count("POST", "/keys") == posts
    await trio.sleep(2)
    await a1.sync("g:team")
    assert a1.transport.count("POST", "/keys") > posts


@virtual
async def test_who_rotates_a_device_the_gate_refuses_named_by_an_incomplete_answer_is_excluded():
    """Client rule 14: a rotation refused as incomplete (carol joined the group between
    the roster read and the post) is posted again with each missing device the approval
    gate refuses named in ``excluding``, and succeeds."""
    world = World(groups={"team": ["alice", "bob"]})
    a1, b1 = await team(world, ("alice", "a1"), ("bob", "b1"))
    await world.registered("carol", "c1")
    a1.config = app_config(approval_mode=APPROVE)
    a1.set_pin("b1", "approved", "human", b1.fingerprint)

    def carol_joins(request):
        if request.method == "POST" and request.path.endswith("/keys"):
            world.host.join("team", "carol")  # after a1 read the roster

    a1.transport.fail = carol_joins
    assert await a1.rotate("g:team")
    graph = world.relay.state.graphs["g:team"]
    assert graph.latest_epoch == 2 and "c1" not in graph.wraps[2] and "b1" in graph.wraps[2]


class _SlowTransport(RecordingTransport):
    """Every request takes a second: a long backlog takes minutes to read."""

    async def send(self, request):
        await trio.sleep(1)
        return await super().send(request)


@virtual
async def test_who_rotates_a_long_backlog_in_another_graph_holds_back_no_turn():
    """Graphs are synced one after another. a2 reads a backlog of g:team one op per page
    over a slow network (minutes of reading) while ``u`` owes a rotation: its turn (one
    turn in, a1 ranks first) still comes on time, because each graph's reads stop at its
    share of ``run_budget_s`` and the next run goes on with them (docs/findings.md, F30).
    Before, the first run read the whole backlog and ``u`` waited behind it (o4)."""
    world = World()
    others = app_config(rotate_after_s=None)
    a1, a2, a3 = await team(
        world, ("alice", "a1"), ("alice", "a2"), ("alice", "a3"),
        configs={"a1": others, "a3": others},
    )  # fmt: skip
    assert await a1.bootstrap("u")
    for device in (a2, a3):
        device.subscribe("u")
    await world.sync_all()
    backlog = 150
    for n in range(backlog):
        a1.put("g:team", f"n{n}", "note", {"t": str(n)})
    await a1.sync("g:team")
    assert (await a1.request("POST", "/devices/a3/revoke")).status == 200
    u = world.relay.state.graphs["u:alice"]
    assert u.rotation_required and u.latest_epoch == 1
    a2.config = AppConfig(pull_limit=1, rotate_after_s=TURN_S)
    a2.transport = _SlowTransport(world.relay)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(a2.run)
        a2.wake()
        await trio.sleep(TURN_S * 5)  # past a2's turn with room to spare, not the backlog
        nursery.cancel_scope.cancel()
    assert a2.store.get("cursor", "g:team", 0) < world.relay.state.graphs["g:team"].seq
    assert u.latest_epoch == 2 and not u.rotation_required
    assert "a2" in u.wraps[2] and "a3" not in u.wraps[2]
