"""Client rules 4-14: epochs, rosters, batches, echoes, clock repair, retries,
capabilities, unopenable wraps, key read-back and the approval gate."""

import json

import trio

from simkit.client import APPROVE, AppConfig
from simkit.protocol import b64url_encode, canonical_json
from simkit.relay import Request
from tests.client.world import (
    EPOCH_MS,
    PAIR,
    RecordingTransport,
    World,
    app_config,
    lost,
    team,
    unavailable,
    virtual,
)


def _kinds(device, kind):
    return [e.fields for e in device.events if e.kind == kind]


@virtual
async def test_rule4_op_under_a_missing_epoch_stops_before_it_keeps_the_cursor_and_never_skips():
    world = World()
    a1, b1 = await team(world, *PAIR, configs={"b1": app_config()})
    a1_approve = app_config(approval_mode=APPROVE)
    a1.config = a1_approve  # alice rotates excluding bob (never approved), then writes
    assert await a1.rotate("g:team")
    assert world.relay.state.graphs["g:team"].latest_epoch == 2
    a1.put("g:team", "secret", "note", {"t": "epoch 2"})
    await a1.sync()
    cursor_before = b1.store.get("cursor", "g:team")
    await b1.sync()
    assert b1.get("g:team", "secret") is None
    assert b1.store.get("cursor", "g:team") == cursor_before  # stopped before the op
    a1.approve("b1")
    await a1.sync()  # grants epoch 2 to bob
    await b1.sync()
    assert b1.get("g:team", "secret")["data"] == {"t": "epoch 2"}


@virtual
async def test_rule5_a_device_behind_an_epoch_holds_its_writes_and_its_epoch_only_moves_up():
    world = World()
    a1, b1 = await team(world, *PAIR)
    a1.config = app_config(approval_mode=APPROVE)
    await a1.rotate("g:team")
    b1.put("g:team", "held", "note", {"t": 1})
    await b1.sync()
    assert b1.graph_status("g:team").behind
    assert _kinds(b1, "keys.behind")
    assert b1.pending("g:team") == 1
    assert "held" not in world.relay.state.graphs["g:team"].records
    b1.note_epoch("g:team", 1)  # an older answer never lowers the epoch
    assert b1.relay_epoch("g:team") == 2
    a1.approve("b1")
    await world.sync_all()
    assert b1.pending("g:team") == 0
    assert world.relay.state.graphs["g:team"].records["held"].e == 2


@virtual
async def test_rule6_a_roster_that_cannot_be_fetched_defers_the_batch_with_the_cursor_kept():
    world = World()
    a1, b1 = await team(world, *PAIR)
    a1.put("g:team", "n1", "note", {"t": 1})
    await a1.sync()
    cursor = b1.store.get("cursor", "g:team")
    b1.transport.fail = lambda r: unavailable(400) if r.path.endswith("/devices") else None
    await b1.sync()
    assert b1.get("g:team", "n1") is None
    assert b1.store.get("cursor", "g:team") == cursor
    b1.transport.fail = None
    await b1.sync()
    assert b1.get("g:team", "n1") is not None


@virtual
async def test_rule7_batches_hold_at_most_200_ops_and_8_mib():
    world = World()
    a1, _ = await team(world, *PAIR)
    for i in range(450):
        a1.put("g:team", f"r{i}", "note", {"i": i})
    await a1.sync()
    assert a1.transport.pushed_batches()[:3] == [200, 200, 50]
    big = "x" * (400 * 1024)
    for i in range(30):  # about 16 MiB of ciphertext once sealed
        a1.put("g:team", f"big{i}", "note", {"blob": big})
    a1.transport.requests.clear()
    await a1.sync()
    sizes = [len(r.body) for r in a1.transport.requests if r.path.endswith("/push")]
    assert sum(sizes) > 8 * 1024 * 1024 and max(sizes) <= 8 * 1024 * 1024
    assert a1.pending() == 0


@virtual
async def test_rule8_echo_skipping_only_when_every_op_of_the_batch_landed():
    world = World()
    a1, b1 = await team(world, *PAIR)
    await a1.sync()
    a1.put("g:team", "n1", "note", {"t": 1})
    a1.put("g:team", "n2", "note", {"t": 2})
    before = a1.store.get("cursor", "g:team")
    await a1.sync()
    assert a1.store.get("cursor", "g:team") == before + 2  # skipped its own echo
    b1.put("g:team", "n3", "note", {"t": 3})
    await b1.sync()
    a1.put("g:team", "n4", "note", {"t": 4})
    await a1.sync()  # bob wrote in between: no skipping, and bob's record arrives
    assert a1.get("g:team", "n3") is not None
    last_run = [e.fields for e in a1.events if e.kind == "sync.done"][-1]
    assert last_run["pulled"] == 2  # bob's n3 and, not skipped, alice's own n4


@virtual
async def test_rule9_clock_repair_adopts_the_relay_now_once_and_lowers_the_high_water_mark():
    world = World()
    _a1, b1 = await team(world, *PAIR)
    b1.clock.offset_ms = 60 * 60 * 1000  # bob's clock is an hour ahead
    first = b1.put("g:team", "n1", "note", {"t": 1})
    assert first["at"] >= EPOCH_MS + 3_600_000
    await b1.sync()
    assert b1.store.get("meta", "skew") == 3_600_000
    landed = world.relay.state.graphs["g:team"].records["n1"].rev
    assert landed < EPOCH_MS + 5 * 60 * 1000
    assert b1.get("g:team", "n1")["at"] == landed
    assert b1.pending() == 0
    second = b1.put("g:team", "n2", "note", {"t": 2})
    assert second["at"] == landed + 1


@virtual
async def test_rule10_429_5xx_and_lost_requests_retry_with_backoff():
    world = World()
    a1, _ = await team(world, *PAIR)
    failures = iter([unavailable(503), unavailable(429), lost])
    a1.transport.fail = lambda r: next(failures, None) if r.path.endswith("/push") else None
    a1.transport.fail = _resolving(a1.transport.fail)
    a1.put("g:team", "n1", "note", {"t": 1})
    start = trio.current_time()
    await a1.sync()
    assert a1.pending() == 0
    assert [s for m, p, s in a1.transport.sent if p.endswith("/push")] == [503, 429, -1, 200]
    assert trio.current_time() - start >= 0.25 + 0.5 + 1.0 - 0.01  # jittered, at least half


def _resolving(fail):
    """Let a failure table hold either Responses or functions of the request."""

    def resolve(request):
        outcome = fail(request)
        return outcome(request) if callable(outcome) else outcome

    return resolve


@virtual
async def test_rule10_other_4xx_are_not_retried_and_are_surfaced():
    world = World()
    a1, _ = await team(world, *PAIR)
    a1.transport.fail = lambda r: unavailable(413) if r.path.endswith("/push") else None
    a1.put("g:team", "n1", "note", {"t": 1})
    await a1.sync()
    assert [s for m, p, s in a1.transport.sent if p.endswith("/push")] == [413]
    assert "413" in a1.status["lastError"]
    assert a1.pending() == 1


@virtual
async def test_rule10_exhausted_retries_leave_the_queue_and_mark_the_relay_unreachable():
    world = World()
    a1, _ = await team(world, *PAIR)
    a1.transport.fail = lambda r: unavailable(503)
    a1.put("g:team", "n1", "note", {"t": 1})
    await a1.sync()
    assert "5 attempts" in a1.status["lastError"]
    assert a1.pending() == 1
    assert a1.status["graphs"]["g:team"]["log"]["state"] == "unverified"


@virtual
async def test_rule11_not_permitted_holds_the_queue_reports_policy_readonly_and_keeps_pulling():
    world = World(capabilities={("bob", "team"): ["rotate"]})
    a1, b1 = await team(world, *PAIR)
    b1.put("g:team", "mine", "note", {"t": "held"})
    a1.put("g:team", "theirs", "note", {"t": "pulled"})
    await a1.sync()
    await b1.sync()
    assert _kinds(b1, "policy.readonly") == [{"need": "write"}]
    assert b1.pending("g:team") == 1
    assert b1.get("g:team", "theirs")["data"] == {"t": "pulled"}
    assert b1.graph_status("g:team").readonly
    await b1.sync()
    assert len(_kinds(b1, "policy.readonly")) == 1  # reported once, not on every run


@virtual
async def test_rule12_a_wrap_that_fails_to_unwrap_is_discarded_and_regranted():
    world = World()
    a1 = await world.registered("alice", "a1")
    b1 = await world.registered("bob", "b1")
    bogus = b64url_encode(canonical_json({"c": "AA", "epk": "AA", "n": "AA"}))
    a1.config = app_config(approval_mode=APPROVE)
    assert await a1.bootstrap("g:team")  # bob excluded: never approved
    grant = {"epoch": 1, "wraps": [{"deviceId": "b1", "wrapped": bogus}]}
    body = canonical_json(grant)
    answer = world.relay.handle(
        Request("POST", "/graphs/g:team/keys", headers=a1.headers(), body=body)
    )
    assert answer.status == 200
    b1.subscribe("g:team")
    await b1.sync()
    assert [e["epoch"] for e in _kinds(b1, "keys.unopenable")] == [1]
    assert "b1" not in world.relay.state.graphs["g:team"].wraps[1]  # DELETE keys/1
    a1.approve("b1")
    await a1.sync()  # keygaps lists bob again: re-granted
    await b1.sync()
    assert 1 in b1.keyring("g:team").keys


@virtual
async def test_rule13_after_creating_epoch_1_the_device_adopts_what_the_relay_holds():
    world = World()
    a1 = await world.registered("alice", "a1")
    a2 = await world.registered("alice", "a2")
    async with trio.open_nursery() as nursery:  # both create epoch 1 at once
        nursery.start_soon(a1.bootstrap, "g:team")
        nursery.start_soon(a2.bootstrap, "g:team")
    assert a1.keyring("g:team").keys[1] == a2.keyring("g:team").keys[1]


@virtual
async def test_rule14_observe_mode_wraps_anyway_and_says_so_once_per_boot():
    world = World()
    a1 = await world.registered("alice", "a1")
    b1 = await world.registered("bob", "b1")
    assert await a1.bootstrap("g:team")
    b1.subscribe("g:team")
    await world.sync_all()
    assert 1 in b1.keyring("g:team").keys
    assert len(_kinds(a1, "linking.unenforced")) == 1
    assert _kinds(a1, "device.pending") == [{"device": "b1", "member": "bob"}]


@virtual
async def test_rule14_approve_mode_wraps_only_approved_devices_and_names_the_rest_in_excluding():
    world = World()
    events = []
    world.relay.on_event = events.append
    a1 = await world.registered("alice", "a1", config=app_config(approval_mode=APPROVE))
    b1 = await world.registered("bob", "b1")
    assert await a1.bootstrap("g:team")
    rotate = [e for e in events if getattr(e, "kind", "") == "graph.rotate"]
    assert rotate and rotate[0].excluded == ("b1",)
    assert not _kinds(a1, "linking.unenforced")
    b1.subscribe("g:team")
    await b1.sync()
    assert b1.linking == "waiting"


@virtual
async def test_rule14_an_approved_device_whose_published_keys_change_is_conflicted():
    world = World()
    a1 = await world.registered("alice", "a1", config=app_config(approval_mode=APPROVE))
    await world.registered("bob", "b1")
    await a1.bootstrap("g:team")
    a1.approve("b1")
    pin = a1.pin("b1")
    a1.set_pin("b1", "approved", "human", "a-different-fingerprint")
    await a1.rotate("g:team")
    assert _kinds(a1, "device.conflict") == [{"device": "b1", "member": "bob"}]
    assert a1.pin("b1").state == "conflicted"
    assert "b1" not in world.relay.state.graphs["g:team"].wraps[2]
    a1.forget_device("b1")
    assert a1.pin("b1") is None
    assert pin.via == "human"


@virtual
async def test_a_write_refused_for_quota_is_reported_and_undone_locally():
    world = World()
    world.relay = type(world.relay)(world.host, world.relay_clock.now_ms, quota_records=1)
    a1, b1 = await team(world, *PAIR)
    a1.put("g:team", "n1", "note", {"t": 1})
    a1.put("g:team", "n2", "note", {"t": 2})
    await a1.sync()
    refused = _kinds(a1, "push.rejected")
    assert [r["reason"] for r in refused] == ["quota-records"]
    lost = refused[0]["recordId"]
    assert a1.get("g:team", lost) is None and a1.pending() == 0  # not kept for ever
    await world.sync_all()
    assert a1.records("g:team") == b1.records("g:team")


@virtual
async def test_rule5_a_keys_read_the_relay_refused_is_due_again_before_the_next_push():
    """F18 (found by the fuzzer): a key recheck the relay refused (403 while carol was
    out of the group) counted as done, so her device pushed under the old epoch right
    after she rejoined, past the rotation that followed a revocation."""
    world = World()
    _, b1 = await team(world, *PAIR, configs={"b1": AppConfig(recheck_s=30.0)})
    b1.transport.fail = lambda r: unavailable(403) if r.path.endswith("/keys") else None
    await b1.sync(full=True)  # the user's "sync now" reads keys: refused
    b1.transport.fail = None
    b1.put("g:team", "n1", "note", {"t": 1})
    b1.transport.sent.clear()
    await b1.sync()
    team_requests = [(m, p) for m, p, _ in b1.transport.sent if "/g:team/" in p]
    assert team_requests[0] == ("GET", "/graphs/g:team/keys")


@virtual
async def test_rule9_a_restamped_write_that_the_copy_kept_aside_outranks_leaves_the_queue():
    """Client rules 9 and 3: b1 (clock an hour ahead) writes n1; its push is refused
    for once (403), so its pull brings a1's newer-by-the-relay but older-by-b1 copy,
    kept aside. Its next push is refused as rev-too-far-ahead: the re-stamp falls below
    the copy kept aside, so that copy wins, and the write leaves the queue for good
    (pushed again, it would overwrite the winner)."""
    world = World()
    a1, b1 = await team(world, *PAIR)
    a1.clock.offset_ms = 50_000  # within maxRevSkew: its writes land as stamped
    b1.clock.offset_ms = 60 * 60 * 1000
    b1.put("g:team", "n1", "note", {"t": "bob's"})
    theirs = a1.put("g:team", "n1", "note", {"t": "alice's"})
    await a1.sync()
    refused = []

    def once(request):
        if request.path.endswith("/push") and not refused:
            refused.append(request)
            return unavailable(403)

    b1.transport.fail = once
    await b1.sync()  # push refused, pull keeps alice's copy aside
    await b1.sync()  # rev-too-far-ahead: the re-stamp loses to the copy kept aside
    assert b1.get("g:team", "n1") == theirs
    assert b1.pending("g:team") == 0
    await world.sync_all()
    assert world.relay.state.graphs["g:team"].records["n1"].rev == theirs["at"]


@virtual
async def test_rule5_a_push_run_stops_sealing_under_an_epoch_its_own_rotation_replaced():
    """A long queue pushed one op per request, the device rotating meanwhile: nothing it
    pushes after the new epoch is minted is sealed under the old key (the key a revoked
    device holds; found by the honest fuzz, ../shared/findings/h1)."""
    world = World()
    slow = RecordingTransport(world.relay)
    original = slow.send

    async def send(request):  # a push answered a second after the relay took it
        response = await original(request)
        if request.path.endswith("/push"):
            await trio.sleep(1)
        return response

    slow.send = send
    a1, _ = await team(world, *PAIR, configs={"a1": app_config(max_batch_ops=1)},
                       transports={"a1": slow})  # fmt: skip
    for i in range(6):
        a1.put("g:team", f"q{i}", "note", {"i": i})
    async with trio.open_nursery() as nursery:
        nursery.start_soon(a1.sync, "g:team")
        await trio.sleep(2.5)
        assert await a1.rotate("g:team")
        rotated = len(slow.requests)
    await a1.sync("g:team")
    assert a1.pending("g:team") == 0
    later = [json.loads(r.body)["ops"] for r in slow.requests[rotated:] if r.path.endswith("/push")]
    assert later and {op["e"] for ops in later for op in ops} == {2}
