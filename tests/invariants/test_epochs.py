"""The `epochs` invariant's older-epoch check (a device holding the latest key holds
every older one another device could grant it) demands what the protocol promises:
holders grant, and the device adopts what a GET keys answer serves it. A wrap stored
after the last GET keys answer a device received is in flight, not owed; a wrap served
and not kept, or one that does not open, is a violation."""

import functools
from pathlib import Path
from types import SimpleNamespace

import trio

from simkit.fuzz.driver import WorldDriver
from simkit.fuzz.params import WorldParams
from simkit.fuzz.reproducer import Reproducer
from simkit.fuzz.steps import apply_step
from simkit.invariants import Monitor
from simkit.invariants import epochs as epochs_module
from simkit.invariants.epochs import KeyFetches
from simkit.protocol.wrap import wrap_graph_key
from simkit.sim.ledger import Ledger
from simkit.sim.trace import TraceEvent
from simkit.sim.variant import HONEST
from simkit.sim.world import World

REPRODUCER = (
    Path(__file__).parents[1]
    / "fuzz"
    / "reproducers"
    / "an-older-epoch-granted-after-the-last-keys-answer.json"
)


_A2_LACKS_EPOCH_1 = (
    "[epochs] a2 holds the latest epoch 2 but not epoch 1, which a1 holds: what was sealed "
    "under it stays unreadable (graph=g:team devices=a2,a1 trace#"
)


def _quiesced(params: WorldParams, steps):
    """A world driven through ``steps`` to quiescence, with the epochs invariant alone."""
    driver = WorldDriver(params.spec(), HONEST)
    monitor = Monitor(honest=True, only=("epochs",))
    found = list(monitor.step(driver.world))
    for index, step in enumerate(steps):
        apply_step(driver, step, index)
        found += monitor.step(driver.world)
    driver.run(driver.world.quiesce)
    return driver, monitor, found


def _older(violations) -> list[str]:
    return [str(v) for v in violations if "but not epoch" in v.detail]


def _keys(world, device_id: str, graph_id: str) -> list[int]:
    return sorted(world.slots[device_id].device.keyring(graph_id).keys)


def _drop_key(world, device_id: str, storage_key: str, epoch: int) -> None:
    """The device loses one epoch's key (what a client that did not keep it would hold)."""
    store = world.slots[device_id].device.store
    wire = store.get("keyring", storage_key)
    keys = {e: k for e, k in wire["keys"].items() if e != str(epoch)}
    store.put("keyring", storage_key, {**wire, "keys": keys})


def test_epochs_an_older_epoch_granted_after_the_devices_last_keys_answer_is_in_flight():
    """The fuzz finding: c1 and a1 granted epochs 1 and 2 to a7 and a9 just after their
    GET keys was served; quiescence came before their next keys check (30 s later, and
    a lost answer). Not flagged; a minute later they hold every epoch, still clean."""
    repro = Reproducer.load(REPRODUCER)
    driver, monitor, found = _quiesced(repro.params, repro.steps)
    try:
        world = driver.world
        assert _keys(world, "a7", "g:team") == [3]  # the gap is real at quiescence
        assert _keys(world, "a9", "g:team") == [3]
        wraps = world.relay.state.graphs["g:team"].wraps
        assert {"a7", "a9"} <= set(wraps[1]) & set(wraps[2])  # and already granted
        assert not found + monitor.final(world)

        async def a_minute():
            await trio.sleep(60)

        driver.run(a_minute)
        for device_id in ("a7", "a9"):
            assert _keys(world, device_id, "g:team") == [1, 2, 3]
            assert _keys(world, device_id, "d:bob") == [1, 2, 3]
        assert not monitor.final(world)
    finally:
        driver.close()


def test_epochs_an_older_epoch_served_to_a_device_that_did_not_keep_it_is_a_violation():
    """a2 was served its wrap of epoch 1 long ago (bootstrap) and holds epoch 2; if it
    then lacks epoch 1, it did not keep what it was served: a violation."""
    steps = [{"rule": "rotate", "by": "a1", "graph": "g:team"}]
    driver, monitor, found = _quiesced(WorldParams(5), steps)
    try:
        world = driver.world
        assert not found + monitor.final(world)
        assert _keys(world, "a2", "g:team") == [1, 2]
        _drop_key(world, "a2", "g:team", 1)
        assert _older(monitor.final(world)) == [_A2_LACKS_EPOCH_1 + f"{len(world.trace)})"]
    finally:
        driver.close()


def _regranted():
    """a2 lost epoch 1 of g:team after quiescence, and a holder then grants it again,
    after a2 last asked for keys: the grant is in flight."""
    steps = [{"rule": "rotate", "by": "a1", "graph": "g:team"}]
    driver, monitor, _ = _quiesced(WorldParams(5), steps)
    world = driver.world
    _drop_key(world, "a2", "g:team", 1)

    async def regrant():
        world.trace.emit(
            "event", "relay", name="keys.grant", graph="g:team", epoch=1,
            member_id="alice", device_id="a1", devices=["a2"],
        )  # fmt: skip

    driver.run(regrant)
    return driver, monitor


def test_epochs_a_grant_after_the_last_keys_answer_excuses_only_a_wrap_that_opens():
    """A grant the relay stored after a2's last GET keys answer is in flight when its
    wrap opens under a2's key; one that does not open is discarded and granted again
    (client rule 12), so until then a2 is owed it."""
    driver, monitor = _regranted()
    try:
        world = driver.world
        assert not _older(monitor.final(world))

        wraps = world.relay.state.graphs["g:team"].wraps[1]
        wraps["a2"] = wraps["c1"]  # a wrap of the right key, for another device's key pair
        assert _older(monitor.final(world)) == [_A2_LACKS_EPOCH_1 + f"{len(world.trace)})"]
    finally:
        driver.close()


def test_epochs_an_unfetched_wrap_is_excused_only_for_one_recheck_and_one_keys_fetch(
    monkeypatch,
):
    """In flight means: the device's next keys check may not have come back yet. Past
    one ``recheck_s`` and a GET keys that times out on every attempt, a device that
    never asked again is owed the key; and a wrap carrying another key than the
    granters' is no grant of theirs."""
    driver, monitor = _regranted()
    try:
        world = driver.world
        assert not _older(monitor.final(world))
        now = world.clock.current_time()
        later = now + epochs_module._patience(world) + 1
        monkeypatch.setattr(world.clock, "current_time", lambda: later)
        assert _older(monitor.final(world)) == [_A2_LACKS_EPOCH_1 + f"{len(world.trace)})"]
        monkeypatch.setattr(world.clock, "current_time", lambda: now)

        a2 = world.slots["a2"].device
        wraps = world.relay.state.graphs["g:team"].wraps[1]
        wraps["a2"] = wrap_graph_key(bytes(32), a2.keys.pub_jwk)  # opens, wrong key
        assert _older(monitor.final(world)) == [_A2_LACKS_EPOCH_1 + f"{len(world.trace)})"]
    finally:
        driver.close()


def _event(seq: int, kind: str, actor: str, **fields) -> TraceEvent:
    return TraceEvent(seq, seq, kind, actor, None, fields)


def test_epochs_a_keys_answer_tells_the_device_what_the_relay_held_when_it_was_served():
    """Order is the relay's: a grant between the delivery of a GET keys and its answer
    reaching the device is unseen; a lost answer, another route's answer and the second
    delivery of a duplicated request tell the device nothing."""
    world = SimpleNamespace(slots={"a2": SimpleNamespace(member="alice")}, ledger=Ledger())
    world.graph_requested = functools.partial(World.graph_requested, world)
    fetches = KeyFetches()

    def feed(*events):
        for event in events:
            if event.kind == "event":
                fetches.stored(world, event)
            else:
                fetches.note(world, event)

    def served(seq, xid, status=200, duplicate=False):
        return _event(seq, "delivery", "relay", device="a2", xid=xid, status=status,
                      applied=True, duplicate=duplicate, size=1)  # fmt: skip

    def grant(seq, epoch):
        return _event(seq, "event", "relay", name="keys.grant", graph="g:team", epoch=epoch,
                      member_id="carol", device_id="c1", devices=["a2"])  # fmt: skip

    feed(
        _event(1, "request", "a2", method="GET", path="/graphs/g:team/keys", xid=7, size=0),
        served(2, 7),
        grant(3, 1),
        _event(4, "response", "a2", xid=7, status=200, size=1),
    )
    assert fetches.unseen("a2", "g:team", 1) is not None
    feed(
        _event(5, "request", "a2", method="GET", path="/graphs/g:team/pull", xid=8, size=0),
        served(6, 8),
        _event(7, "response", "a2", xid=8, status=200, size=1),
        _event(8, "request", "a2", method="GET", path="/graphs/g:team/keys", xid=9, size=0),
        served(9, 9),  # its answer is lost: no response event
        _event(10, "request", "a2", method="GET", path="/graphs/g:team/keys", xid=10, size=0),
        served(11, 10, status=503),
        _event(12, "response", "a2", xid=10, status=503, size=1),
    )
    assert fetches.unseen("a2", "g:team", 1) is not None
    feed(
        _event(13, "request", "a2", method="GET", path="/graphs/g:team/keys", xid=11, size=0),
        served(14, 11),
        _event(15, "response", "a2", xid=11, status=200, size=1),
        served(16, 11, duplicate=True),
    )
    assert fetches.unseen("a2", "g:team", 1) is None
    feed(grant(17, 2))
    assert fetches.unseen("a2", "g:team", 2) is not None
    assert fetches.unseen("a2", "g:team", 1) is None
    assert fetches.unseen("a2", "u:alice", 1) is None  # nothing stored: nothing in flight
