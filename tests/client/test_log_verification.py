"""Log verification and checkpoints (spec: Log rules, Client verification, Checkpoint
rules, Log verification status)."""

import json

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simkit.client.logverify import LogState, fold, newest_boundary, pruned_past, verified
from simkit.client.schemas import CHECKPOINT_KIND, checkpoint_data_ok
from simkit.protocol import checkpoint_record_id
from simkit.relay import Response
from tests.client.world import (
    EPOCH_MS,
    PAIR,
    RecordingTransport,
    World,
    app_config,
    forge,
    team,
    unavailable,
    virtual,
)


class Tampering(RecordingTransport):
    """The honest relay behind an edit of the answers one device receives."""

    def __init__(self, relay, edit) -> None:
        super().__init__(relay)
        self.edit = edit

    async def send(self, request):
        response = await super().send(request)
        if response.status != 200 or not response.headers.get("content-type", "").startswith(
            "application/json"
        ):
            return response
        body = self.edit(request, response.json())
        return attrs.evolve(response, body=json.dumps(body).encode())


def _withhold(record_id):
    def edit(request, body):
        if request.path.endswith("/pull"):
            body["ops"] = [op for op in body["ops"] if op["recordId"] != record_id]
        return body

    return edit


@virtual
async def test_honest_relay_log_verification_reaches_ok():
    world = World()
    a1, b1 = await team(world, *PAIR)
    a1.put("g:team", "n1", "note", {"t": 1})
    await world.sync_all()
    assert b1.graph_status("g:team").log == "ok"


@virtual
async def test_check1_a_log_entry_naming_a_withheld_record_latches_alarm():
    world = World()
    transport = Tampering(world.relay, _withhold("hidden"))
    a1, b1 = await team(world, *PAIR, transports={"b1": transport})
    a1.put("g:team", "hidden", "note", {"t": "withheld from bob"})
    a1.put("g:team", "shown", "note", {"t": 2})
    await world.sync_all()
    assert b1.graph_status("g:team").log == "alarm"
    alarm = [e.fields["reason"] for e in b1.events if e.kind == "log.alarm"]
    assert len(alarm) == 1 and "'hidden'" in alarm[0]
    transport.edit = lambda request, body: body  # the relay turns honest: alarm stays latched
    await world.sync_all()
    assert b1.graph_status("g:team").log == "alarm"


@virtual
async def test_check1_records_refused_on_purpose_do_not_raise_the_alarm():
    world = World()
    a1, b1 = await team(world, *PAIR)
    forge(a1, "g:team", {"id": "x", "kind": "note", "data": {}, "at": EPOCH_MS, "by": "bob"})
    await world.sync_all()
    assert b1.rejected()[0]["reason"] == "wrong-author"
    assert b1.graph_status("g:team").log == "ok"


@virtual
async def test_log_pruned_past_the_device_anchors_its_chain_and_it_never_reports_ok_again():
    """Log verification status: 'ok -> unverified: log pruned past the device'; 'A device
    whose chain is anchored mid-log (status.graphs[g].log.from) keeps folding forward but
    never compares heads, never publishes a checkpoint and never reports ok'."""
    world = World(log_keep=8)
    a1, b1 = await team(world, *PAIR)
    for i in range(5):
        a1.put("g:team", f"n{i}", "note", {"i": i})
    await world.sync_all()
    assert b1.graph_status("g:team").log == "ok"
    through = b1.log_state("g:team").through
    for i in range(5, 17):  # b1 away: a1 alone syncs, and the relay prunes what b1 never read
        a1.put("g:team", f"n{i}", "note", {"i": i})
        if i % 4 == 0:
            await a1.sync()
    oldest = world.relay.state.graphs["g:team"].log[-8].seq
    assert oldest > through + 1
    await world.sync_all()
    status = b1.graph_status("g:team")
    assert (status.log, status.log_from) == ("unverified", oldest - 1)
    assert status.to_json()["log"] == {"state": "unverified", "from": oldest - 1}
    assert [e.fields["seq"] for e in b1.events if e.kind == "log.anchored"] == [oldest - 1]
    assert a1.graph_status("g:team").log == "ok"  # a1 read every entry before it went
    for i in range(70):  # b1 folds forward, never ok, never publishes a checkpoint
        a1.put("g:team", f"m{i}", "note", {"i": i})
        if i % 4 == 0:
            await world.sync_all()
    await world.sync_all()
    assert b1.graph_status("g:team").log == "unverified"
    assert b1.log_state("g:team").through == world.relay.state.graphs["g:team"].seq
    assert b1.log_state("g:team").published == 0 and not b1.log_state("g:team").heads
    assert a1.log_state("g:team").published == 64 and a1.graph_status("g:team").log == "ok"
    assert len([e for e in b1.events if e.kind == "log.anchored"]) == 1
    assert not [e for e in b1.events if e.kind == "log.alarm"]


def test_a_log_read_pruned_past_the_device_restarts_its_chain_anchored_and_leaves_alarm_latched():
    """A device cannot tell seqs pruned from seqs spent by refused ops (push rule 4's
    counter), so a kept log that starts above the next seq it needs anchors it there."""
    log = LogState.start("sk", 0)
    anchored = pruned_past(log, 7)
    assert (anchored.state, anchored.anchored_from, anchored.through) == ("unverified", 6, 6)
    assert anchored.head == "anchor:6" and anchored.heads == {}
    assert verified(anchored).state == "unverified"
    alarmed = log.alarmed("a contradiction")
    assert pruned_past(alarmed, 7) is alarmed


def _fork_at(seq):
    """Serve one device a log whose entry ``seq`` carries another rev: a divergent history."""

    def edit(request, body):
        if request.path.endswith("/log"):
            for entry in body["entries"]:
                if entry["seq"] == seq:
                    entry["rev"] -= 1
        return body

    return edit


@virtual
async def test_check2_a_peer_checkpoint_with_another_head_at_a_boundary_latches_alarm():
    world = World()
    a1, b1 = await team(world, *PAIR, transports={"b1": Tampering(world.relay, _fork_at(5))})
    for i in range(70):
        a1.put("g:team", f"n{i}", "note", {"i": i})
    await world.sync_all()
    assert a1.log_state("g:team").published == 64
    assert b1.graph_status("g:team").log == "alarm"
    assert "boundary 64" in b1.log_state("g:team").alarm


@virtual
async def test_honest_checkpoints_agree_and_are_published_every_64_seqs():
    world = World()
    a1, b1 = await team(world, *PAIR)
    for i in range(140):
        a1.put("g:team", f"n{i}", "note", {"i": i})
    await world.sync_all()
    assert a1.log_state("g:team").published == 128
    assert b1.log_state("g:team").claims["a1"]["seq"] == 128
    assert a1.graph_status("g:team").log == b1.graph_status("g:team").log == "ok"


@virtual
async def test_a_checkpoint_in_a_slot_not_derived_for_its_device_is_not_believed():
    world = World()
    a1, b1 = await team(world, *PAIR)
    for i in range(70):
        a1.put("g:team", f"n{i}", "note", {"i": i})
    await world.sync_all()
    bogus = {"v": 1, "d": "a1", "seq": 64, "head": "A" * 43}
    forge(a1, "g:team", {"id": "wrong-slot", "kind": CHECKPOINT_KIND, "data": bogus,
                         "at": EPOCH_MS + 99, "by": "alice"})  # fmt: skip
    await world.sync_all()
    assert b1.graph_status("g:team").log == "ok"


@virtual
async def test_a_checkpoint_whose_author_does_not_own_its_device_is_not_believed():
    world = World()
    a1, b1 = await team(world, *PAIR)
    for i in range(70):
        a1.put("g:team", f"n{i}", "note", {"i": i})
    await world.sync_all()
    c1 = await world.registered("carol", "c1")
    c1.subscribe("g:team")
    await world.sync_all()
    slot = checkpoint_record_id(a1.keyring("g:team").keys[1], "a1")
    bogus = {"v": 1, "d": "a1", "seq": 64, "head": "A" * 43}
    forge(c1, "g:team", {"id": slot, "kind": CHECKPOINT_KIND, "data": bogus,
                         "at": EPOCH_MS + 10**6, "by": "carol"})  # fmt: skip
    await world.sync_all()
    assert b1.graph_status("g:team").log == "ok"


@virtual
async def test_a_relay_without_the_log_route_leaves_the_status_unverified_not_alarm():
    world = World()

    def no_log(request):
        if request.path.endswith("/log"):
            return Response(404, {"content-type": "application/json"}, b'{"error":"not-found"}')
        return None

    a1, b1 = await team(world, *PAIR)
    b1.transport.fail = no_log
    a1.put("g:team", "n1", "note", {"t": 1})
    await world.sync_all()
    assert b1.graph_status("g:team").log == "unverified"


@virtual
async def test_a_chain_started_mid_log_folds_forward_but_never_reports_ok_or_publishes():
    world = World()
    a1 = await world.registered("alice", "a1")
    b1 = await world.registered("bob", "b1", config=app_config(log_verification=False))
    assert await a1.bootstrap("g:team")
    b1.subscribe("g:team")
    for i in range(10):
        a1.put("g:team", f"n{i}", "note", {"i": i})
    await world.sync_all()
    b1.config = app_config(log_verification=True)
    for i in range(80):
        a1.put("g:team", f"m{i}", "note", {"i": i})
    await world.sync_all()
    status = b1.graph_status("g:team")
    assert status.log == "unverified" and status.log_from == 91  # served when it started
    assert b1.status["graphs"]["g:team"]["log"] == {"state": "unverified", "from": 91}
    for i in range(80):
        a1.put("g:team", f"k{i}", "note", {"i": i})
    await world.sync_all()
    log = b1.log_state("g:team")
    assert log.through > 91 + 64 and log.state == "unverified"  # folds forward
    assert log.published == 0 and not log.heads  # never publishes, never compares


@virtual
async def test_only_filtered_subscriptions_give_log_status_off():
    world = World()
    a1 = await world.registered("alice", "a1")
    b1 = await world.registered("bob", "b1")
    assert await a1.bootstrap("g:team")
    b1.subscribe("g:team", kinds=["task"])
    await world.sync_all()
    assert b1.graph_status("g:team").log == "off"


def test_a_reversed_log_page_reaching_past_the_served_seq_still_latches_alarm():
    from simkit.client.logverify import LogState, fold

    log = LogState.start("g:team", 0)
    page = [{"seq": s, "recordId": "r", "rev": s} for s in (9, 8, 7)]  # 9 is beyond served
    folded = fold(log, page, 8, lambda r: 100, lambda r: None)
    assert folded.state == "alarm" and "increasing seq order" in folded.alarm
    assert folded.through == 0  # nothing was folded past entries it never checked


@virtual
async def test_check1_excuses_an_old_entry_whose_record_moved_past_a_pull_stopped_by_rule_4():
    """Found by the fuzzer: a record rewritten under an epoch the device lacks sits
    beyond the seq it was served; its older log entries name versions no longer served."""
    from simkit.client import APPROVE

    world = World()
    a1 = await world.registered("alice", "a1", config=app_config(approval_mode=APPROVE))
    b1 = await world.registered("bob", "b1")
    a1.set_pin("b1", "approved", "human", b1.fingerprint)
    assert await a1.bootstrap("g:team")
    a1.put("g:team", "r0", "note", {"v": 1})  # seq 1, epoch 1
    a1.put("g:team", "r1", "note", {"v": 1})  # seq 2, epoch 1
    await a1.sync()
    a1.forget_device("b1")
    assert await a1.rotate("g:team")  # epoch 2 excludes b1
    a1.put("g:team", "r0", "note", {"v": 2})  # seq 3, epoch 2
    await a1.sync()
    b1.subscribe("g:team")
    await b1.sync()
    assert b1.store.get("cursor", "g:team") == 2 and b1.get("g:team", "r1") is not None
    assert b1.graph_status("g:team").log != "alarm"


@given(st.lists(st.integers(1, 150), min_size=1, max_size=8))
def test_the_newest_boundary_is_the_largest_final_head_however_the_log_was_paged(pages):
    log, seq = LogState.start("g:team", 0), 0
    for size in pages:  # fold the log in pages of these sizes, each complete
        entries = [
            {"seq": s, "recordId": f"r{s}", "rev": 1} for s in range(seq + 1, seq + size + 1)
        ]
        seq += size
        log = fold(log, entries, seq, lambda rid: 1, lambda rid: None)
        if log.heads:
            assert newest_boundary(log) == max(int(b) for b in log.heads)
        else:
            assert newest_boundary(log) == 0


@virtual
async def test_a_push_answer_below_a_cursor_served_on_a_deferred_page_latches_alarm():
    """The relay's counter never goes back (docs/findings.md, F15, found by the fuzzer):
    a rolled-back relay answered a push with a counter below the cursor it had served
    on a page the device deferred (client rule 6), so the device's own cursor lagged and
    a check against it alone saw nothing."""
    world = World()
    a1, b1 = await team(world, *PAIR)
    for i in range(3):
        a1.put("g:team", f"n{i}", "note", {"t": i})
    await a1.sync()
    b1.transport.fail = lambda r: unavailable(400) if r.path.endswith("/devices") else None
    await b1.sync()  # the page is served, its roster cannot be read: deferred
    kept = b1.store.get("cursor", "g:team")
    assert b1.get("g:team", "n0") is None and b1.graph_status("g:team").log != "alarm"

    def rolled_back(request):
        if request.path.endswith("/devices"):
            return unavailable(400)
        if not request.path.endswith("/push"):
            return None
        response = world.relay.handle(request)
        body = {**response.json(), "cursor": kept + 2}  # below what it served: rolled back
        return attrs.evolve(response, body=json.dumps(body).encode())

    b1.transport.fail = rolled_back
    b1.put("g:team", "mine", "note", {"t": "b"})
    await b1.sync()
    assert b1.graph_status("g:team").log == "alarm"
    alarm = [e.fields["reason"] for e in b1.events if e.kind == "log.alarm"]
    assert alarm == [f"push answer cursor {kept + 2} is below seq {kept + 3} served"]


@virtual
async def test_rule4_a_page_out_of_seq_order_never_carries_the_cursor_past_a_missing_epoch():
    """F16 (found by the device model under a reordering relay): the client moved its
    cursor to each op's seq as the page listed them, so a later seq listed first
    carried it past an op under an epoch it lacked, which no pull would serve again."""

    def edit(request, body):
        if request.path.endswith("/keys") and request.method == "GET":
            body["wraps"] = [w for w in body["wraps"] if w["epoch"] != 1]  # b1 lacks epoch 1
        if request.path.endswith("/pull"):
            body["ops"] = list(reversed(body["ops"]))
        return body

    world = World()
    a1 = await world.registered("alice", "a1")
    b1 = await world.registered("bob", "b1", transport=Tampering(world.relay, edit))
    assert await a1.bootstrap("g:team")
    a1.put("g:team", "r0", "note", {"under": 1})  # seq 1, epoch 1
    await a1.sync()
    assert await a1.rotate("g:team")
    a1.put("g:team", "r1", "note", {"under": 2})  # seq 2, epoch 2
    await a1.sync()
    b1.subscribe("g:team")
    await b1.sync()
    assert set(b1.keyring("g:team").keys) == {2}
    assert b1.store.get("cursor", "g:team", 0) == 0  # stopped before seq 1, never past it


@pytest.mark.parametrize(
    ("head", "valid"),
    [("A" * 43, True), ("A" * 42, False), ("A" * 42 + "=", False), ("A" * 42 + "+", False),
     ("x", False), (7, False)],
)  # fmt: skip
def test_checkpoint_record_head_is_the_base64url_chain_head(head, valid):
    """Checkpoint record: `head` is the chain head (base64url, 32 bytes: 43 characters)."""
    assert bool(checkpoint_data_ok({"v": 1, "d": "a1", "seq": 64, "head": head})) is valid


@virtual
async def test_check1_a_contradiction_read_before_the_log_is_pruned_under_the_read_latches_alarm():
    """F40 (docs/findings.md): a relay withholding a record from b1 listed it on a log
    page, then said on the next page that the log was pruned past the entry b1 had just
    read. b1 anchored where the kept log starts and threw the contradiction away with
    what it had read. It now judges what it read before it anchors: after a whole pull
    to the seq served no record can have moved, so the entry is judged however far the
    read got."""
    world = World()
    a1 = await world.registered("alice", "a1")
    await a1.bootstrap("g:team")
    a1.put("g:team", "hidden", "note", {"t": "withheld from bob"})
    for i in range(3):
        a1.put("g:team", f"n{i}", "note", {"i": i})
    await a1.sync("g:team")
    hidden = world.relay.state.graphs["g:team"].records["hidden"].seq

    def edit(request, body):
        body = _withhold("hidden")(request, body)
        if request.path.endswith("/log") and int(request.query["after"]) == hidden:
            body.update(entries=[], oldest=body["head"], more=False)  # "pruned" under the read
        return body

    transport = Tampering(world.relay, edit)
    b1 = world.device("bob", "b1", transport=transport, config=app_config(log_page=1))
    await b1.register()
    b1.subscribe("g:team")
    await a1.sync("g:team")  # grants b1 the key
    await b1.sync("g:team")
    assert b1.graph_status("g:team").log == "alarm"
    assert "'hidden'" in next(e for e in b1.events if e.kind == "log.alarm").fields["reason"]


@virtual
async def test_a_log_head_below_an_op_the_pull_served_latches_alarm():
    """F41 (docs/findings.md): a relay rolled back its log for b1 (head 0, no entries)
    after its pull had served ops at seqs 1 to 3. "`head` is the highest seq in the log",
    and the relay logs every write it stores: the log contradicts the pull. b1 folded
    the empty page as if seqs 1 to 3 were spent, and its chain then differed from every
    peer's at the next boundary; it now alarms on the page itself."""
    world = World()
    rolled_back = {"on": False}

    def edit(request, body):
        if rolled_back["on"] and request.path.endswith("/log"):
            body.update(entries=[], cursor=0, head=0, oldest=0, more=False)
        return body

    a1, b1 = await team(world, *PAIR, transports={"b1": Tampering(world.relay, edit)})
    for i in range(3):
        a1.put("g:team", f"n{i}", "note", {"i": i})
    await a1.sync("g:team")
    rolled_back["on"] = True
    await b1.sync("g:team")
    assert b1.graph_status("g:team").log == "alarm"
    reason = next(e for e in b1.events if e.kind == "log.alarm").fields["reason"]
    assert reason.startswith("log head 0 is below seq")


@virtual
async def test_a_roster_key_that_does_not_import_is_excluded_from_a_rotation_not_a_crash():
    """F43 (docs/findings.md): a relay served a1 a roster whose entry for a1 itself
    carried a public key that does not import (3 bytes of `x`); a1's rotation wrapped
    the new key to it and the exception crashed the device's run loop. Client rule 14
    names every active device of the roster read, wrapped or excluded: one that cannot
    be wrapped to is excluded (the gate never lets it through, its own entry included)."""
    world = World()
    malformed = {"on": False}

    def edit(request, body):
        if malformed["on"] and request.path.endswith("/devices"):
            for entry in body["devices"]:
                if entry["deviceId"] == "a1":
                    entry["pubJwk"] = {**entry["pubJwk"], "x": "AAAA"}
        return body

    a1, _ = await team(world, *PAIR, transports={"a1": Tampering(world.relay, edit)})
    malformed["on"] = True
    await a1.rotate("g:team")  # no exception
    graph = world.relay.state.graphs["g:team"]
    assert graph.latest_epoch == 2 and "a1" not in graph.wraps[2] and "b1" in graph.wraps[2]
