"""One worker's share of a check: extend some prefixes by some letters, judge each
sequence, in one world built once.

The share's prefixes form a trie. The world is set up once; at each node of the trie
the world is copied (``simkit.fuzz.snapshot``) and the copy does that node's step, so a
prefix's steps run once for all its extensions. Each sequence of the share is judged
in a copy of its prefix: its last step, every invariant and both models after it, its
state's digest (``simkit.check.digest``), then quiescence and the final checks,
exactly as a reproducer's replay judges the same steps. Without snapshots each
sequence is replayed from a fresh world instead (how much the copies save is measured
with that, docs/checking.md).
"""

import os

import attrs

from simkit.check.digest import state_digest
from simkit.check.scope import Scope
from simkit.errors import describe
from simkit.fuzz.actions import StepError, turns_malicious
from simkit.fuzz.driver import WorldDriver
from simkit.fuzz.snapshot import copy_world
from simkit.fuzz.steps import apply_step
from simkit.invariants import Monitor
from simkit.realtime import epoch_ms
from simkit.sim.exercise import Exercise, exercise_of
from simkit.sim.variant import HONEST
from simkit.sim.variants import load_variant


@attrs.frozen
class Judged:
    """One sequence, judged: the digest of the state its last step reached (None: that
    step does not apply there), and what broke (invariant violations as their JSON, or
    the exception that crashed the world)."""

    sequence: tuple[int, ...]
    digest: str | None
    violations: tuple[dict, ...] = ()
    error: str | None = None
    at_quiescence: bool = False
    exercise: Exercise | None = None

    @property
    def failed(self) -> bool:
        return bool(self.violations) or self.error is not None


@attrs.frozen
class Share:
    """A worker's part of one depth: each prefix with the letters that extend it."""

    scope: Scope
    jobs: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]
    variant: str | None = None
    base: str | None = None
    snapshots: bool = True
    deadline: float | None = None  # epoch seconds: no sequence starts after it (any machine)
    stop_on_failure: bool = True  # off under a change: a failure may be the base's too
    # a file whose existence says another share failed: stop (its later sequences are moot)
    stop_file: str | None = None
    # the search's deepest depth: a digest holds only what the steps left can tell apart
    depth: int | None = None


@attrs.frozen
class ShareResult:
    judged: tuple[Judged, ...]
    root: str  # the digest of the world as set up
    setup_failure: Judged | None = None  # the set-up world already breaks an invariant
    cut: bool = False  # the deadline came before every sequence ran


class _Stop(Exception):
    """A failure (or the deadline) ends the share: later sequences are not needed."""


class _Explorer:
    def __init__(self, share: Share) -> None:
        self.share = share
        self.scope = share.scope
        self.variant = load_variant(share.variant) if share.variant else HONEST
        self.base = load_variant(share.base) if share.base else HONEST
        self.judged: list[Judged] = []
        self.cut = False

    def _left(self, sequence: tuple[int, ...]) -> int | None:
        """The steps a sequence may still be extended by (None: no bound)."""
        return None if self.share.depth is None else self.share.depth - len(sequence)

    def world(self) -> tuple[WorldDriver, Monitor, list]:
        """The scope's world set up and brought to its moment (the prefix), and what
        broke on the way."""
        spec = self.scope.params.spec()
        driver, monitor = WorldDriver(spec, self.variant, base=self.base), Monitor(honest=True)
        violations = monitor.step(driver.world)
        for index, step in enumerate(self.scope.prefix):
            if violations:
                break
            self.do_step(driver, monitor, step, index)
            violations = monitor.step(driver.world)
        return driver, monitor, violations

    def run(self) -> ShareResult:
        try:
            driver, monitor, violations = self.world()
        except Exception as exc:  # the set-up (or the moment) crashed the world: a finding
            return ShareResult((), "", Judged((), None, error=describe(exc)))
        try:
            root = state_digest(driver.world, monitor, self._left(()))
            if violations:
                return ShareResult((), root, Judged((), root, _json(violations)))
            if self.share.snapshots:
                self._walk(driver, monitor, _trie(self.share.jobs), ())
            else:
                self._replaying()
        except _Stop:
            pass
        finally:
            driver.close()
        return ShareResult(tuple(self.judged), root, cut=self.cut)

    # -- with snapshots -------------------------------------------------------------------

    def _walk(self, driver, monitor, node: dict, prefix: tuple[int, ...]) -> None:
        for letter in node.get(None, ()):
            if self._late():
                raise _Stop
            self._keep(copy_world(driver, _judge_in_copy, self, monitor, (*prefix, letter)))
        for letter, child in sorted((k, v) for k, v in node.items() if k is not None):
            judged, cut, stopped = copy_world(
                driver, _descend_in_copy, self, monitor, prefix, letter, child
            )
            for one in judged:
                self._keep(one)
            self.cut = self.cut or cut
            if stopped:
                raise _Stop

    def _keep(self, judged: Judged) -> None:
        self.judged.append(judged)
        if judged.failed and self.share.stop_on_failure:
            raise _Stop

    # -- without --------------------------------------------------------------------------

    def _replaying(self) -> None:
        for prefix, letters in self.share.jobs:
            for letter in letters:
                if self._late():
                    raise _Stop
                driver, monitor, _ = self.world()
                try:
                    for index, earlier in enumerate(prefix):
                        self.do(driver, monitor, earlier, index)
                        monitor.step(driver.world)
                    self._keep(self.judge(driver, monitor, (*prefix, letter)))
                finally:
                    driver.close()

    # -- one sequence ---------------------------------------------------------------------

    def _late(self) -> bool:
        """Whether to stop before the next sequence: the deadline passed (the share is
        cut), or another share failed (its results no longer matter)."""
        late = self.share.deadline is not None and epoch_ms() / 1000 > self.share.deadline
        self.cut = self.cut or late
        return late or bool(self.share.stop_file and os.path.exists(self.share.stop_file))

    def do(self, driver, monitor, letter: int, position: int) -> None:
        """The ``position``-th letter of a sequence (after the scope's prefix)."""
        step = self.scope.alphabet[letter]
        self.do_step(driver, monitor, step, len(self.scope.prefix) + position)

    @staticmethod
    def do_step(driver, monitor, step, index: int) -> None:
        if turns_malicious(step):
            monitor.relay_turned()
        apply_step(driver, step, index)

    def judge(self, driver, monitor, sequence: tuple[int, ...]) -> Judged:
        world = driver.world
        if not applies(world, self.scope.alphabet[sequence[-1]]):
            return Judged(sequence, None)

        def judged(digest, violations=(), **more) -> Judged:
            # how often the change ran: only a change's check needs it (not the hot path's)
            ran = None if self.variant is HONEST else exercise_of(world)
            return Judged(sequence, digest, _json(violations), exercise=ran, **more)

        try:
            self.do(driver, monitor, sequence[-1], len(sequence) - 1)
        except StepError:
            return Judged(sequence, None)  # the letter does not apply after this prefix
        except Exception as exc:
            return judged(None, error=describe(exc))
        violations = monitor.step(world)
        digest = state_digest(world, monitor, self._left(sequence))
        if violations:
            return judged(digest, violations)
        try:
            driver.run(world.quiesce)
        except Exception as exc:
            return judged(digest, error=describe(exc), at_quiescence=True)
        violations = monitor.final(world)
        return judged(digest, violations, at_quiescence=bool(violations))


FAULTS = ("crash", "restart", "partition", "jump", "adversary")
"""Rules that act *on* devices (a fault, the relay's mode), not through them: they apply
to any device of the world, running or not."""


def applies(world, step) -> bool:
    """Whether a letter applies to the world as it stands, as the fuzz machines'
    preconditions have it: every device it acts through runs (alive, and not revoked
    unless a thief runs it), and the device it brings in does not exist yet."""
    made = getattr(step, "ceremony", step)
    brought = made.creates()
    if brought is not None and brought in world.slots:
        return False
    if made.RULE in FAULTS:
        return True
    for device in made.actors():
        slot = world.slots.get(device)
        if device != brought and (
            slot is None or not slot.alive or (slot.revoked and not slot.stolen)
        ):
            return False
    return True


def _judge_in_copy(driver, explorer: _Explorer, monitor, sequence) -> Judged:
    return explorer.judge(driver, monitor, sequence)


def _descend_in_copy(driver, explorer: _Explorer, monitor, prefix, letter, node):
    """In a copy: do ``letter`` after ``prefix``, then the subtree ``node`` below it."""
    explorer.do(driver, monitor, letter, len(prefix))
    monitor.step(driver.world)  # judged already as a sequence of its own: keeps the judges' state
    explorer.judged.clear()
    try:
        explorer._walk(driver, monitor, node, (*prefix, letter))
    except _Stop:  # a failure, the deadline or another share's failure: the share ends
        return tuple(explorer.judged), explorer.cut, True
    return tuple(explorer.judged), explorer.cut, False


def _trie(jobs) -> dict:
    """The prefixes as a trie: letter -> subtree; key None: the letters judged there."""
    root: dict = {}
    for prefix, letters in jobs:
        node = root
        for letter in prefix:
            node = node.setdefault(letter, {})
        node[None] = tuple(letters)
    return root


def _json(violations) -> tuple[dict, ...]:
    return tuple(v.to_json() for v in violations)


def explore(share: Share) -> ShareResult:
    """Judge every sequence of ``share`` (the function a worker runs)."""
    return _Explorer(share).run()
