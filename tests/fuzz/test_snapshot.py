"""World snapshots (``simkit.fuzz.snapshot``): a copy of a world at quiescence goes on
exactly as the world itself would, and leaves the world as it was."""

import pytest

from simkit.fuzz.actions import turns_malicious
from simkit.fuzz.driver import WorldDriver
from simkit.fuzz.reproducer import Reproducer, replay
from simkit.fuzz.snapshot import CopyFailed, SnapshotError, copy_world
from simkit.fuzz.steps import apply_step
from simkit.invariants import Monitor
from tests.fuzz.test_reproducers import CORPUS

# the regression set's honest reproducers: many worlds (settings, swarms, faults, crashes,
# ceremonies, malicious relays) and many steps each
CASES = [
    p for p in CORPUS if Reproducer.load(p).variant is None and Reproducer.load(p).base is None
][::6]


def _rest(driver, monitor, steps, first):
    """The steps from ``first`` on, then quiescence: the trace hash and every violation."""
    found = []
    for index, step in enumerate(steps[first:], start=first):
        apply_step(driver, step, index)
        found += [v.to_json() for v in monitor.step(driver.world)]
    driver.run(driver.world.quiesce)
    found += [v.to_json() for v in monitor.final(driver.world)]
    return driver.world.trace.trace_hash(), found


def _monitor(repro):
    """As ``replay`` judges: every invariant unless the relay acted maliciously."""
    malicious = any(turns_malicious(s) for s in repro.steps)
    return Monitor(honest=repro.machine == "honest" or not malicious)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_a_copied_world_continues_exactly_as_the_world_itself(path):
    repro = Reproducer.load(path)
    cut = len(repro.steps) // 2
    driver = WorldDriver(repro.params.spec())
    monitor = _monitor(repro)
    try:
        monitor.step(driver.world)
        for index, step in enumerate(repro.steps[:cut]):
            apply_step(driver, step, index)
            monitor.step(driver.world)
        in_copy = copy_world(driver, _rest, monitor, repro.steps, cut)
        in_copy_again = copy_world(driver, _rest, monitor, repro.steps, cut)
        itself = _rest(driver, monitor, repro.steps, cut)
    finally:
        driver.close()
    assert in_copy == itself == in_copy_again
    straight = replay(repro)  # and as a replay from the start, which stops at a violation
    if not straight.violations:
        assert itself[0] == straight.trace_hash


def test_a_world_is_copied_only_between_steps():
    repro = Reproducer.load(CASES[0])
    driver = WorldDriver(repro.params.spec())
    try:
        with pytest.raises(SnapshotError, match="inside one of its own steps"):
            driver.do(copy_world, driver, lambda d: None)
        with pytest.raises(CopyFailed, match="ZeroDivisionError"):
            copy_world(driver, lambda d: 1 / 0)
        assert copy_world(driver, lambda d: d.now()) == driver.now()
    finally:
        driver.close()
