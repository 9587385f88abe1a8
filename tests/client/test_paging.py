"""Bounded paging (docs/client.md, "Paging"): a device reading pages from a relay that
never stops paging ends its run with a clear error, never loops for ever."""

import functools
import json

import pytest

from simkit.client import logread, sync
from simkit.client.paging import MAX_PAGES, Pages
from simkit.protocol.logchain import CHECKPOINT_STRIDE, log_genesis, log_step
from simkit.relay import Relay, Response
from tests.client.world import (
    PAIR,
    RecordingTransport,
    World,
    app_config,
    team,
    unavailable,
    virtual,
)
from tests.fuzz.paging_variants import CreepingCursor, EndlessLog, EndlessMore, StuckLog


def _world(relay_class, **settings) -> World:
    world = World()
    world.relay = relay_class(world.host, world.relay_clock.now_ms, **settings)
    return world


def _three_pages_a_read(monkeypatch) -> None:
    """Every pull and log read stops after three pages (its page limit)."""
    for module in (sync, logread):
        monkeypatch.setattr(module, "Pages", functools.partial(Pages, limit=3))


def _kinds(device, kind):
    return [e for e in device.events if e.kind == kind]


@virtual
async def test_a_pull_page_that_says_more_without_advancing_ends_the_run_keeping_the_cursor():
    world = _world(EndlessMore)
    a1, b1 = await team(world, *PAIR)  # every sync run in it ends
    a1.put("g:team", "n1", "note", {"t": "hi"})
    await a1.sync("g:team")
    await b1.sync("g:team")
    assert b1.get("g:team", "n1")["data"] == {"t": "hi"}  # the page that advanced was applied
    seq = world.relay.state.graphs["g:team"].seq
    assert b1.store.get("cursor", "g:team") == seq  # and its cursor kept
    assert "did not advance the cursor" in b1.status["lastError"]
    stopped = _kinds(b1, "sync.stopped")[-1]
    assert stopped.graph == "g:team"
    assert stopped.fields == {"route": "pull", "reason": "no-progress", "after": seq, "cursor": seq}
    assert _kinds(b1, "sync.done")[-1].fields == {"error": "stalled"}


@virtual
async def test_a_log_page_that_says_more_without_advancing_ends_the_run():
    world = _world(StuckLog)
    a1, b1 = await team(world, *PAIR)
    a1.put("g:team", "n1", "note", {"t": "hi"})
    await a1.sync("g:team")
    await b1.sync("g:team")
    assert b1.get("g:team", "n1")["data"] == {"t": "hi"}  # the pull was honest
    assert _kinds(b1, "sync.stopped")[-1].fields["route"] == "log"
    assert "log g:team: the relay returned a page" in b1.status["lastError"]


class StuckLater(StuckLog):
    """An honest relay until ``stuck``: then every log page comes back empty with ``more``."""

    stuck = False

    def _log(self, call):
        return super()._log(call) if self.stuck else Relay._log(self, call)


@virtual
async def test_a_stalled_log_read_keeps_the_anchor_its_pruned_page_brought():
    """o6 (docs/findings.md, F39): "What the earlier pages brought is applied" holds for
    the log too. A page that says the log was pruned past the device and then stalls
    leaves the chain anchored and the status unverified ('ok -> unverified: log pruned
    past the device'), not the genesis chain still reporting ok."""
    world = _world(StuckLater, log_keep=8)
    a1, b1 = await team(world, *PAIR)
    a1.put("g:team", "n0", "note", {"i": 0})
    await world.sync_all()
    assert b1.graph_status("g:team").log == "ok"
    through = b1.log_state("g:team").through
    for i in range(1, 13):  # b1 away: the relay prunes what it never read
        a1.put("g:team", f"n{i}", "note", {"i": i})
        await a1.sync()
    oldest = world.relay.state.graphs["g:team"].log[-8].seq
    assert oldest > through + 1
    world.relay.stuck = True
    await b1.sync("g:team")
    assert _kinds(b1, "sync.stopped")[-1].fields["route"] == "log"
    assert [e.fields["seq"] for e in _kinds(b1, "log.anchored")] == [oldest - 1]
    status = b1.graph_status("g:team")
    assert (status.log, status.log_from) == ("unverified", oldest - 1)


@virtual
async def test_a_log_read_stops_at_the_served_seq_when_no_entry_waits_on_a_later_one():
    """F11 (docs/findings.md): a read went on past the served seq to the log's end, one
    entry a page under a tight rate limit, and held up the device's pulls for minutes.
    It now stops once it has every entry up to the served seq and each names a
    version the device holds, so a relay's "more" on the page after is never asked."""
    world = _world(EndlessLog)
    transport = RecordingTransport(world.relay)
    a1, b1 = await team(world, *PAIR, transports={"b1": transport})
    a1.put("g:team", "n1", "note", {"t": "hi"})
    await a1.sync("g:team")
    before = transport.count("GET", "/log")
    await b1.sync("g:team")
    assert b1.get("g:team", "n1")["data"] == {"t": "hi"}
    assert transport.count("GET", "/log") - before == 1  # one page, up to the served seq
    assert b1.log_state("g:team").state == "ok"
    assert not [e for e in _kinds(b1, "sync.stopped") if e.fields["route"] == "log"]


@virtual
async def test_a_pull_that_pages_without_end_stops_at_the_page_limit():
    world = _world(CreepingCursor, rate_limits={})  # count pages, not 429 retries
    transport = RecordingTransport(world.relay)
    b1 = await world.registered("bob", "b1", transport=transport)
    b1.subscribe("u")
    await b1.sync("u")
    assert transport.count("GET", "/pull") == MAX_PAGES
    assert f"stopped after {MAX_PAGES} pages" in b1.status["lastError"]
    assert _kinds(b1, "sync.stopped")[-1].fields == {"route": "pull", "reason": "page-limit"}


@virtual
async def test_a_log_read_cut_short_at_the_page_limit_folds_only_the_entries_it_read(monkeypatch):
    """F8 (docs/findings.md): the read stopped at its page limit, yet the fold marked
    every boundary up to the served seq final, with a head lacking their entries: two
    honest devices then disagreed at a boundary and raised the log alarm."""
    _three_pages_a_read(monkeypatch)
    world = World()
    config = app_config(log_page=1, pull_limit=500)
    a1, b1 = await team(world, *PAIR, configs={"a1": config, "b1": config})
    for n in range(CHECKPOINT_STRIDE + 6):
        a1.put("g:team", f"n{n}", "note", {"n": n})
    await a1.sync("g:team")  # b1's one pull page brings them all: its log read lags
    for _ in range(40):
        await b1.sync("g:team")
    log = world.relay.state.graphs["g:team"].log
    head = log_genesis("g:team")
    for entry in log:
        if entry.seq > CHECKPOINT_STRIDE:
            break
        head = log_step(head, entry.seq, entry.record_id, entry.rev)
    state = b1.log_state("g:team")
    assert state.state == "ok", state.alarm
    assert state.heads[str(CHECKPOINT_STRIDE)] == head
    assert _kinds(b1, "sync.stopped")[0].fields == {"route": "log", "reason": "page-limit"}


@virtual
async def test_a_log_read_cut_short_leaves_an_entry_of_a_record_that_moved_beyond_it(monkeypatch):
    """F8's second half: an entry names an older version of a record whose current row
    lies beyond both cut-short reads. The device was never served that version, and
    cannot yet see that the record moved: it must wait, not raise the alarm."""
    _three_pages_a_read(monkeypatch)
    world = World()
    world.relay = type(world.relay)(world.host, world.relay_clock.now_ms, max_pull_limit=1)
    a1, b1 = await team(world, *PAIR, configs={"a1": app_config(), "b1": app_config()})
    a1.put("g:team", "moved", "note", {"v": 1})
    await a1.sync("g:team")
    for n in range(8):
        a1.put("g:team", f"n{n}", "note", {"n": n})
    a1.put("g:team", "moved", "note", {"v": 2})
    await a1.sync("g:team")
    for _ in range(10):
        await b1.sync("g:team")
    state = b1.log_state("g:team")
    assert state.state == "ok", state.alarm
    assert b1.get("g:team", "moved")["data"] == {"v": 2}
    assert {"route": "log", "reason": "page-limit"} in [
        e.fields for e in _kinds(b1, "sync.stopped")
    ]


@virtual
async def test_a_log_read_the_relay_stops_answering_keeps_what_it_read():
    """F10 (docs/findings.md): a log read that ran out of retries mid-way threw away
    every page it had read, so under a rate limit that never let one read finish, the
    next run read the same pages again, for ever. What was read is folded and kept;
    the run still ends unreachable, and the next one reads on."""
    world = World()
    config = app_config(log_page=1, pull_limit=500)
    a1, b1 = await team(world, *PAIR, configs={"a1": config, "b1": config})
    for n in range(10):
        a1.put("g:team", f"n{n}", "note", {"n": n})
    await a1.sync("g:team")
    start = b1.log_state("g:team").through if b1.log_state("g:team") else 0
    pages = iter(range(10_000))

    def busy_after_four_log_pages(request):
        if request.path.endswith("/log") and next(pages) >= 4:
            return unavailable(503)
        return None

    b1.transport.fail = busy_after_four_log_pages
    await b1.sync("g:team")
    assert _kinds(b1, "sync.done")[-1].fields.get("error") == "unreachable"
    kept = b1.log_state("g:team")
    assert kept.through > start and kept.state != "alarm"
    b1.transport.fail = None
    await b1.sync("g:team")
    assert b1.log_state("g:team").state == "ok"


@virtual
async def test_after_a_whole_pull_a_later_entry_excuses_no_earlier_one():
    """F26 (docs/findings.md): log check (1) excuses an entry whose record has a later
    entry beyond the seq served only while the pull may have stopped before the relay's
    end (F8). Here the relay withholds r from b1's pulls, each answered to its end (no
    ``more``) at the seq of a1's first write of r, and a1 writes r again: the log lists
    both versions. After a whole pull the later entry came after it: b1 alarms at once."""
    world = World()
    a1, b1 = await team(world, *PAIR)
    await b1.sync("g:team")
    a1.put("g:team", "r", "note", {"v": 1})
    await a1.sync("g:team")
    served = b1.store.get("cursor", "g:team", 0) + 1  # a1's write: the relay's end now
    answer = json.dumps({"ops": [], "cursor": served, "more": False, "epoch": 1}).encode()

    def withholding(request):
        if request.path == "/graphs/g:team/pull":
            return Response(200, {"content-type": "application/json"}, answer)
        return None

    b1.transport.fail = lambda request: (
        unavailable(503) if request.path.endswith("/log") else withholding(request)
    )
    await b1.sync("g:team")  # pulled to the end; its log read finds the relay out of reach
    assert b1.store.get("pulled", "g:team") == {"cursor": served, "whole": True}
    a1.put("g:team", "r", "note", {"v": 2})
    await a1.sync("g:team")  # r moves beyond what b1 was served
    b1.transport.fail = withholding
    await b1.sync("g:team")
    state = b1.log_state("g:team")
    assert state.state == "alarm"
    assert f"log entry seq {served} names 'r'" in state.alarm


@pytest.mark.parametrize("stop", ["unreachable", "page-limit"])
@virtual
async def test_a_log_read_stopped_past_the_served_seq_leaves_an_entry_of_a_moved_record(
    monkeypatch, stop
):
    """A pull that stopped early (here at its share of the run, F30) was served a record
    only in its newer version, beyond the served seq. The log read went on past that seq
    for the record's later entry (F11) and stopped before it got there: the relay out
    of reach (F10) or the read's page limit (F8). The entry of the older version cannot
    be judged yet: the device must wait, not alarm (found by an honest campaign: a
    checkpoint record written over while a restarted device read a backlog)."""
    if stop == "page-limit":
        _three_pages_a_read(monkeypatch)
    world = World()
    config = app_config(pull_limit=1, log_page=1, run_budget_s=0)  # every pull: one page
    a1, b1 = await team(world, *PAIR, configs={"a1": app_config(), "b1": config})
    a1.put("g:team", "moved", "note", {"v": 1})
    await a1.sync("g:team")
    for n in range(4):
        a1.put("g:team", f"n{n}", "note", {"n": n})
    a1.put("g:team", "moved", "note", {"v": 2})  # its row moves beyond n3
    await a1.sync("g:team")
    through = b1.log_state("g:team").through
    pages = iter(range(10_000))

    def out_of_reach_after_three_log_pages(request):
        if request.path.endswith("/log") and next(pages) >= 3:
            return unavailable(503)
        return None

    if stop == "unreachable":
        b1.transport.fail = out_of_reach_after_three_log_pages
    await b1.sync("g:team")
    # one pull page: n0 (v1 of "moved" is no longer at its seq); the log read had v1's
    # entry, n0's and n1's when it stopped, "moved"'s later entry still unread
    assert b1.store.get("cursor", "g:team") == through + 2
    stopped = [e.fields.get("reason") for e in _kinds(b1, "sync.stopped")]
    if stop == "unreachable":
        assert _kinds(b1, "sync.done")[-1].fields.get("error") == "unreachable"
    else:
        assert stopped[-1] == "page-limit"
    state = b1.log_state("g:team")
    assert state.state != "alarm", state.alarm
    assert state.through == through  # v1's entry waits for a read that reaches further
    b1.transport.fail = None
    for _ in range(10):
        await b1.sync("g:team")
    assert b1.get("g:team", "moved")["data"] == {"v": 2}
    assert b1.log_state("g:team").state == "ok", b1.log_state("g:team").alarm
