"""Quiescence ends once nothing is left that the devices can do without a human
(``simkit.sim.settle.settled``) and nothing has changed for ``STABLE_S``: a world left with writes
held for good or a view stopped before a key that is not coming is settled, not
judged stuck after ``drain_s``; a key that is coming keeps it unsettled. Worlds are
fuzz step lists replayed exactly (fuzz worlds: 40 s stable, 180 s patience)."""

import pytest

from simkit.fuzz.driver import WorldDriver
from simkit.fuzz.params import WorldParams
from simkit.fuzz.reproducer import Reproducer, replay
from simkit.fuzz.steps import apply_step
from simkit.sim import settle
from simkit.sim.settle import STABLE_S
from tests.fuzz.test_rule_reach import HANDOVER, HANDOVER_WORLD


def _replay(world: dict, steps: list[dict]):
    data = {"machine": "honest", "variant": None, "world": world, "steps": steps}
    result = replay(Reproducer.from_json(data))
    assert not result.violations, "\n".join(str(v) for v in result.violations)
    return result.world


def _quiescence(world) -> tuple[float, float | None]:
    """When quiescence began (heal-all), and when the world settled (None: never)."""
    start = next(e.t for e in world.trace if e.fields.get("what") == "heal-all")
    return start, world.settled_at


def _settled_without_waiting_out_patience(world) -> None:
    start, settled = _quiescence(world)
    assert settled is not None, "quiescence judged the world stuck"
    assert settled - start <= STABLE_S + 30, (start, settled)


def test_quiescence_settles_with_a_write_a_member_may_not_make_held_in_its_queue():
    """Spec, capabilities: the relay refuses bob's pushes to g:team (403 not-permitted,
    client rule 11: hold the queued writes); liveness excuses the write, and so does
    quiescence."""
    world = _replay(
        {"seed": 5, "capabilities": {"bob": "read-only"}, "rules": ["capability"]},
        [
            {"rule": "write", "device": "b1", "graph": "g:team", "record": "r0", "op": "edit"},
            {"rule": "advance", "seconds": 30},
        ],
    )
    assert world.slots["b1"].device.pending("g:team") == 1
    _settled_without_waiting_out_patience(world)


def test_quiescence_settles_with_a_write_held_behind_an_epoch():
    """Client rule 5: a6 holds epoch 1 only, so its write waits for epoch 2 for good."""
    world = _replay(
        HANDOVER_WORLD,
        [
            *HANDOVER,
            {"rule": "write", "device": "a6", "graph": "g:team", "record": "r0", "op": "edit"},
        ],
    )
    assert world.slots["a6"].device.pending("g:team") == 1
    _settled_without_waiting_out_patience(world)


def test_quiescence_settles_with_a_view_stopped_before_a_key_nobody_will_grant():
    """Client rule 4: a6's pull stops before b1's record under epoch 2 and never skips
    it; every holder of epoch 2 has not approved a6, so in approve mode none wraps it
    (client rule 14). Once a holder approves a6, the world has something left to do."""
    world = _replay(
        HANDOVER_WORLD,
        [
            *HANDOVER,
            {"rule": "write", "device": "b1", "graph": "g:team", "record": "r1", "op": "edit"},
            {"rule": "advance", "seconds": 30},
        ],
    )
    a6 = world.slots["a6"].device
    assert set(a6.keyring("g:team").keys) == {1}
    assert a6.get("g:team", "r1") is None
    _settled_without_waiting_out_patience(world)
    assert settle.settled(world)
    world.slots["b2"].device.approve("a6")
    assert not settle.settled(world)


def test_quiescence_does_not_settle_while_a_view_can_still_pull():
    """An unfiltered cursor below the relay's counter, with the key to read what waits
    there, is not settled; nor is a write its device may push."""
    world = _replay(
        {"seed": 5},
        [
            {"rule": "write", "device": "a1", "graph": "g:team", "record": "r0", "op": "edit"},
            {"rule": "advance", "seconds": 30},
        ],
    )
    assert settle.settled(world)
    b1 = world.slots["b1"].device
    b1.store.put("cursor", "g:team", 0)
    assert not settle.settled(world)
    b1.store.put("cursor", "g:team", world.relay.state.graphs["g:team"].seq)
    b1.store.put("queue:g:team", "r1", {})  # a queued write (outside the world's run)
    assert not settle.settled(world)


LINK_AND_WRITE = [
    {"rule": "link", "member": "alice", "device": "a6", "announce": False},
    {"rule": "write", "device": "a6", "graph": "g:team", "record": "r0", "op": "edit"},
]


@pytest.mark.parametrize(("mode", "settled"), [("observe", False), ("approve", True)])
def test_quiescence_waits_for_a_key_a_holder_will_grant_and_only_for_that(mode, settled):
    """A just linked device holds no key yet, so client rule 5 holds its write. In observe mode
    every holder will wrap the key to it at its next key recheck: the world is not
    settled. In approve mode nobody approved it, so no holder will (client rule 14)."""
    driver = WorldDriver(WorldParams(5, approval_mode=mode, rules=("link",)).spec())
    try:
        for index, step in enumerate(LINK_AND_WRITE):
            apply_step(driver, step, index)
        a6 = driver.world.slots["a6"].device
        assert a6.pending("g:team") == 1 and not a6.keyring("g:team").keys
        assert settle.settled(driver.world) is settled
    finally:
        driver.close()
