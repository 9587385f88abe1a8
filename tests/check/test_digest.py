"""The state digest (``simkit.check.digest``): two worlds with one digest are judged alike
by every continuation, so ``simkit check`` may extend only the first. Each test is a way
a digest could merge worlds that differ."""

import os
import subprocess
import sys

import pytest

from simkit.check.digest import state_digest
from simkit.check.explore import Share, _Explorer, applies
from simkit.check.scope import load_scope
from simkit.fuzz.snapshot import copy_world
from simkit.invariants.blindness import Blindness

SCOPE = load_scope()
LETTERS = SCOPE.alphabet
CAPABILITY = next(i for i, step in enumerate(LETTERS) if step.RULE == "capability")
WRITE_B1 = next(i for i, step in enumerate(LETTERS) if step.RULE == "write" and step.device == "b1")


@pytest.fixture(scope="module")
def world():
    explorer = _Explorer(Share(SCOPE, ()))
    driver, monitor, _ = explorer.world()
    yield explorer, driver, monitor
    driver.close()


def _run(driver, explorer, monitor, sequence, settle, start):
    """The sequence's digest after its last step and, with ``settle``, its digest and
    what broke at quiescence; its steps numbered from ``start``."""
    for index, letter in enumerate(sequence, start):
        explorer.do(driver, monitor, letter, index)
        monitor.step(driver.world)
    after = state_digest(driver.world, monitor, 3 - len(sequence))
    if not settle:
        return after
    driver.run(driver.world.quiesce)
    broke = sorted(v.invariant for v in monitor.final(driver.world))
    return after, state_digest(driver.world, monitor, 0), broke


def _digest(world, sequence, settle=False, start=0):
    explorer, driver, monitor = world
    return copy_world(driver, _run, explorer, monitor, sequence, settle, start)


def test_a_step_that_changes_only_the_hosts_directory_changes_the_digest(world):
    """Withdrawing bob's capabilities traces nothing (the host is not a party) and bob can
    still read, yet his next push is refused: the directory is part of the state."""
    assert _digest(world, (CAPABILITY,)) != _digest(world, ())
    assert _digest(world, (CAPABILITY, WRITE_B1)) != _digest(world, (WRITE_B1,))


def test_a_letter_that_leaves_the_digest_alone_leaves_every_continuation_judged_alike(world):
    """Where a letter reaches the digest of the world before it, every next letter judged
    after it settles to the state and verdict it settles to without it. (A step's number
    names what it writes, `x1-0` for a burst's first record at step 1: the check judges
    the merged sequence with its steps numbered one lower, the same world up to those
    names; here both number the next letter 1.)"""
    root = _digest(world, ())
    unchanged = [i for i in range(len(LETTERS)) if _applies(world, i) and
                 _digest(world, (i,)) == root]  # fmt: skip
    assert unchanged, "no letter of the default scope leaves the world as it was"
    alone = {
        following: _digest(world, (following,), settle=True, start=1)
        for following in range(len(LETTERS))
        if _applies(world, following)
    }
    for letter in unchanged:
        for following, settled in alone.items():
            assert _digest(world, (letter, following), settle=True) == settled, (
                LETTERS[letter],
                LETTERS[following],
            )


def _applies(world, letter):
    return applies(world[1].world, LETTERS[letter])


def test_what_a_checker_remembers_between_steps_is_part_of_the_state(world):
    _, driver, monitor = world
    owed = next(inv for inv in monitor.invariants if inv.name == "rotation-owed")
    before = state_digest(driver.world, monitor)
    saved = dict(owed._owed)
    owed._owed["g:team"] = 12.5  # a rotation owed for 12.5 s, as a sampled step leaves it
    try:
        assert state_digest(driver.world, monitor) != before
    finally:
        owed._owed = saved
    assert state_digest(driver.world, monitor) == before


def test_blindness_remembers_its_scan_phase_only_when_a_scan_comes_within_the_steps_left():
    blindness = Blindness(every=10)
    blindness._steps = 3  # its next scan is 7 steps away
    assert blindness.remembers(6) == {}
    assert blindness.remembers(7) == blindness.remembers(None) == {"until_scan": 7}


_IN_ANOTHER_PROCESS = """
from simkit.check.digest import state_digest
from simkit.check.explore import Share, _Explorer
from simkit.check.scope import load_scope
from simkit.fuzz.snapshot import copy_world

def run(driver, explorer, monitor, sequence):
    for index, letter in enumerate(sequence):
        explorer.do(driver, monitor, letter, index)
        monitor.step(driver.world)
    return state_digest(driver.world, monitor, 1)

explorer = _Explorer(Share(load_scope(), ()))
driver, monitor, _ = explorer.world()
print([copy_world(driver, run, explorer, monitor, s) for s in [(22, 38), (23, 26), (33, 22)]])
driver.close()
"""


def test_a_digest_is_the_same_in_any_process_whatever_its_hash_seed():
    """Workers compare digests made in other processes: sets and dict keys in what the
    judges remember are written in an order no hash seed moves (a rotation and a blob, a
    revocation and a theft, a key substitution and a rotation)."""
    digests = [
        subprocess.run(
            [sys.executable, "-c", _IN_ANOTHER_PROCESS],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    ]
    assert digests[0] == digests[1] and digests[0].count("'") == 6
