"""Shrinking a failing run the way a person would read it: fewer actors, no fault or
ceremony the failure does not need, fewer steps, shorter waits.

Hypothesis shrinks the choices behind a run, which for a world of many devices cuts
little: a client finding came back as 20 to 50 steps. This shrinker works on the
step list itself and replays each candidate (``replay``, which stops after the first
step an invariant breaks at). A candidate counts when it breaks the same invariant
(a crash: with the same exception type). In order, until a whole round changes
nothing:

1. keep only the last 1, 2, 4, 8, ... steps (with the steps that brought in the
   devices they name), shortest first: a failure that needs only its last steps is
   cut at once, and a short candidate costs little to replay;
2. drop every step of each device the violation does not name (and of the devices
   it brought in);
3. drop whole classes of steps: faults (an interrupted ceremony becomes the ceremony
   alone), raw rogue requests, malicious relay modes, forgeries, blobs, ceremonies;
4. delta debugging over the step list (drop halves, then quarters, ... then single
   steps);
5. merge adjacent waits and shorten each.

A step that names a device is dropped with the step that brought the device in.
Candidates are tried in a fixed order and the first that counts is kept, so the
result depends only on the run and the budget; with ``workers`` > 1 a batch of
candidates is replayed at once in worker processes, and still the first in order
that counts is kept.
"""

import concurrent.futures
import json
import math
import multiprocessing
from collections.abc import Callable, Iterable

import attrs

from simkit.fuzz import actions as A
from simkit.fuzz.attribution import base_failure
from simkit.fuzz.fields import MAX_SECONDS
from simkit.fuzz.reproducer import Reproducer, replay
from simkit.realtime import wall_clock

KINDS: tuple[tuple[str, tuple[type[A.Step], ...]], ...] = (
    ("faults", (A.Partition, A.Heal, A.RelayCrash, A.Errors, A.Crash, A.Restart, A.Jump)),
    ("rogue requests", (A.Rogue,)),
    ("malicious relay modes", (A.Adversary, A.Merge)),
    ("forgeries", (A.Forge, A.Malformed, A.FalseCheckpoint, A.Newer)),
    ("blobs", (A.BlobUpload, A.BlobFetch, A.BlobDelete, A.Sweep)),
    ("upgrades", (A.Upgrade,)),
    (
        "ceremonies",
        (
            A.Link, A.Revoke, A.Rotate, A.RotateRace, A.Recover, A.Invite, A.Steal, A.Approve,
            A.Reject, A.Pair, A.Join, A.Leave, A.Capability, A.Reimport, A.Interrupt,
        ),
    ),
)  # fmt: skip
WAITS = (1, 5, 30)  # what a wait is shortened to, shortest first


@attrs.frozen
class Target:
    """What a candidate must do to count: break ``invariant``, or (``invariant`` None)
    crash with an exception of type ``error``; and (``change``: the run's finding is the
    change's own) hold on the base, so that shrinking never trades the change's finding
    for one the base has too."""

    invariant: str | None
    error: str | None = None
    change: bool = False
    against: str | None = None  # the base it is judged against (``attribution.base_of``)

    @classmethod
    def of(
        cls, repro: Reproducer, failure: BaseException | None = None, change: bool = False
    ) -> "Target":
        if repro.violations:
            return cls(repro.violations[0]["invariant"], None, change)
        error = type(failure).__name__ if failure is not None else "Exception"
        return cls(None, error, change)


def counts(data: dict, target: Target) -> dict | None:
    """How the reproducer ``data`` (its JSON form, a variant ref already resolved)
    fails, if it fails as ``target`` says: its ``violations`` and ``trace_hash``; else
    None. Module-level: a worker process runs it."""
    repro = Reproducer.from_json(data)
    try:
        result = replay(repro)
    except Exception as exc:  # a candidate may crash the world: it counts only for a crash
        crashed = target.invariant is None and type(exc).__name__ == target.error
        failed = {"violations": (), "trace_hash": None} if crashed else None
    else:
        hit = any(v.invariant == target.invariant for v in result.violations)
        violations = tuple(v.to_json() for v in result.violations)
        failed = {"violations": violations, "trace_hash": result.trace_hash} if hit else None
    if failed is not None and target.change and base_failure(repro, target.against) is not None:
        return None  # the base fails on these steps too: not the change's finding
    return failed


@attrs.define
class Shrunk:
    """How shrinking went: the shortest failing run, the candidates replayed, and how it
    ended: "done" (no smaller candidate left), or the limit that cut it: "budget"
    (seconds) or "attempts"."""

    reproducer: Reproducer
    attempts: int = 0
    steps: int = 0  # steps replayed, over every candidate
    ended: str = "done"


class _Spent(Exception):
    """The budget ran out between candidates."""


class Shrinker:
    """Shrinks ``repro`` (which fails as ``target`` says) until nothing smaller fails or
    the budget (a wall ``deadline``, a number of ``attempts``) runs out. ``better(r)``
    is called with each shorter failing run as it is found; ``tried(shrunk)`` after each
    batch of candidates (raise KeyboardInterrupt there to stop, as Ctrl-C does)."""

    def __init__(
        self,
        repro: Reproducer,
        target: Target,
        *,
        deadline: float = math.inf,
        attempts: int | None = None,
        workers: int = 1,
        better: Callable[[Reproducer], None] = lambda repro: None,
        tried: Callable[[Shrunk], None] = lambda shrunk: None,
    ) -> None:
        self.target, self.deadline, self.max_attempts = target, deadline, attempts
        self.workers, self.better, self.tried = workers, better, tried
        self.shrunk = Shrunk(repro)
        self.best = tuple(repro.steps)
        self._seen: set[str] = {_key(self.best)}
        fleet = repro.params.spec().devices
        self._initial = frozenset(d for ids in fleet.values() for d in ids)
        self._pool: concurrent.futures.Executor | None = None

    def run(self) -> Shrunk:
        try:
            while True:
                before = self.best
                passes = (self._tails, self._actors, self._kinds, self._ddmin, self._waits)
                for shrink_pass in passes:
                    shrink_pass()
                if self.best == before:
                    break
        except _Spent:
            pass
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
        return self.shrunk

    # -- the passes ---------------------------------------------------------------------

    def _tails(self) -> None:
        """Keep only the last 1, 2, 4, ... steps, shortest first. Before this pass a
        forgery at the end of a 63-step run took 100 s of shrinking (a replay of the
        whole run per candidate) to lose its first 20 steps (docs/fuzzing.md)."""
        lengths = []
        length = 1
        while length < len(self.best):
            lengths.append(length)
            length *= 2
        self._first([list(self.best[-n:]) for n in lengths])

    def _actors(self) -> None:
        """Drop every step of a device the violation does not name."""
        named = {d for v in self.shrunk.reproducer.violations for d in v.get("devices", ())}
        if not named:
            return
        actors = sorted({d for step in self.best for d in (*step.actors(), step.creates())}
                        - named - {None})  # fmt: skip
        for actor in actors:
            self._first([[s for s in self.best if actor not in (*s.actors(), s.creates())]])

    def _kinds(self) -> None:
        """Drop whole classes of steps, faults first; an interrupted ceremony becomes the
        ceremony alone."""
        self._first([[s.ceremony if isinstance(s, A.Interrupt) else s for s in self.best]])
        for _, kinds in KINDS:
            self._first([[s for s in self.best if not isinstance(s, kinds)]])

    def _ddmin(self) -> None:
        """Delta debugging: drop each of n parts of the list (n = 2, 4, ... one step
        each), going back to fewer parts after every cut."""
        parts = 2
        while len(self.best) >= 1:
            n = min(parts, len(self.best))
            bounds = [len(self.best) * i // n for i in range(n + 1)]
            cut = self._first(
                [self.best[: bounds[i]] + self.best[bounds[i + 1] :] for i in range(n)]
            )
            if cut:
                parts = max(parts - 1, 2)
            elif n >= len(self.best):
                return
            else:
                parts = min(2 * parts, len(self.best))

    def _waits(self) -> None:
        """Merge adjacent waits, then shorten each wait."""
        merged: list[A.Step] = []
        for step in self.best:
            if merged and isinstance(step, A.Advance) and isinstance(merged[-1], A.Advance):
                total = min(merged[-1].seconds + step.seconds, MAX_SECONDS)
                merged[-1] = A.Advance(seconds=total)
            else:
                merged.append(step)
        self._first([merged])
        for index, step in enumerate(self.best):
            if isinstance(step, A.Advance):
                shorter = [w for w in WAITS if w < step.seconds]
                self._first([self._with(index, A.Advance(seconds=w)) for w in shorter])

    # -- candidates ---------------------------------------------------------------------

    def _with(self, index: int, step: A.Step) -> list[A.Step]:
        return [*self.best[:index], step, *self.best[index + 1 :]]

    def _first(self, candidates: Iterable[list[A.Step]]) -> bool:
        """Try the candidates in order (each made whole: a step naming a device no kept
        step brought in goes too); keep the first that fails as the target says."""
        fresh = []
        for candidate in candidates:
            steps = self._whole(candidate)
            key = _key(steps)
            if len(steps) <= len(self.best) and key not in self._seen:
                self._seen.add(key)
                fresh.append(steps)
        for batch in _batches(fresh, self.workers):
            batch = self._afford(batch)
            found = self._first_counting(batch)
            self.tried(self.shrunk)
            if found is not None:
                self._keep(*found)
                return True
        return False

    def _whole(self, steps: list[A.Step]) -> tuple[A.Step, ...]:
        alive, kept = set(self._initial), []
        for step in steps:
            if all(d in alive for d in step.actors() if d != step.creates()):
                kept.append(step)
                if step.creates():
                    alive.add(step.creates())
        return tuple(kept)

    def _afford(self, batch: list) -> list:
        """The part of ``batch`` the budget still allows; ``_Spent`` when none."""
        shrunk = self.shrunk
        if wall_clock() >= self.deadline:
            shrunk.ended = "budget"
            raise _Spent
        if self.max_attempts is not None:
            left = self.max_attempts - shrunk.attempts
            if left <= 0:
                shrunk.ended = "attempts"
                raise _Spent
            batch = batch[:left]
        return batch

    def _first_counting(self, batch: list[tuple[A.Step, ...]]) -> tuple | None:
        """The first candidate of ``batch`` that counts, with how it fails."""
        datas = [self._data(steps) for steps in batch]
        if self.workers <= 1 or len(batch) == 1:
            for steps, data in zip(batch, datas, strict=True):
                self._count(steps)
                failed = counts(data, self.target)
                if failed is not None:
                    return steps, failed
            return None
        if self._pool is None:
            context = multiprocessing.get_context("spawn")
            self._pool = concurrent.futures.ProcessPoolExecutor(self.workers, mp_context=context)
        futures = [self._pool.submit(counts, data, self.target) for data in datas]
        for steps in batch:
            self._count(steps)
        for steps, future in zip(batch, futures, strict=True):
            failed = future.result()
            if failed is not None:
                for rest in futures:
                    rest.cancel()
                return steps, failed
        return None

    def _count(self, steps) -> None:
        self.shrunk.attempts += 1
        self.shrunk.steps += len(steps)

    def _data(self, steps: tuple[A.Step, ...]) -> dict:
        return attrs.evolve(self.shrunk.reproducer, steps=steps).to_json()

    def _keep(self, steps: tuple[A.Step, ...], failed: dict) -> None:
        repro = attrs.evolve(
            self.shrunk.reproducer,
            steps=steps,
            violations=tuple(failed["violations"]),
            trace_hash=failed["trace_hash"],
        )
        self.best, self.shrunk.reproducer = steps, repro
        self.better(repro)


def _key(steps) -> str:
    return json.dumps([step.to_json() for step in steps], sort_keys=True)


def _batches(items: list, size: int) -> Iterable[list]:
    size = max(size, 1)
    for start in range(0, len(items), size):
        yield items[start : start + size]
