"""``simkit check``'s search: every sequence of up to K letters of a scope, depth by
depth, on every core or a Dask cluster.

Depth d extends each prefix kept at depth d - 1 by every letter: the sequences of one
depth are cut into contiguous shares (``simkit.check.explore``), run by the workers and
read back in order, so the first failure reported is the first of the shortest failing
sequences in the alphabet's order, whatever the workers' timing. Two reductions decide
what is extended, each switched off to measure what it saves (docs/checking.md): a
prefix whose state digest was reached before (at this depth or a shallower one) is not
extended again, and under the scope's symmetry only the sequence that names a group's
members in the group's order is run (its mirror images are the same history with the
names exchanged).
"""

from collections.abc import Callable
from pathlib import Path

import attrs

from simkit.check.explore import Judged, Share, ShareResult, explore
from simkit.check.scope import Scope, mentions
from simkit.fuzz.actions import turns_malicious
from simkit.fuzz.attribution import PRESENT, Attribution, attributed
from simkit.fuzz.reproducer import Reproducer
from simkit.fuzz.snapshot import available
from simkit.realtime import epoch_ms, wall_clock
from simkit.sim.exercise import Exercise

SHARES_PER_WORKER = 4  # more shares than workers: a slow share does not hold a depth back
SHARE_SEQUENCES = 300  # at most about this many per share: progress every few seconds


@attrs.frozen
class Reductions:
    snapshots: bool = True  # copy each prefix's world instead of replaying it
    states: bool = True  # extend a state reached before only once
    symmetry: bool = True  # run one of each mirror image under the scope's symmetry

    def off(self) -> list[str]:
        return [name for name, on in attrs.asdict(self).items() if not on]


@attrs.define
class Level:
    """One depth's counts."""

    depth: int
    sequences: int = 0  # judged: their last letter applied
    inapplicable: int = 0  # their last letter does not apply after the prefix
    mirrored: int = 0  # left out as mirror images (symmetry)
    states: int = 0  # new states reached, kept to extend
    repeated: int = 0  # reached a state seen before: not extended
    failed: int = 0
    planned: int = 0  # sequences this depth was to judge (symmetry applied)
    seconds: float = 0.0
    complete: bool = False

    @property
    def run(self) -> int:
        return self.sequences + self.inapplicable + self.failed

    def line(self, ending: str | None = None) -> str:
        """The depth's counts; ``ending``: how it ended (None: still running)."""
        state = ending or f"running, {self.run:,} of {self.planned:,}"
        return (
            f"depth {self.depth} {state}: {self.sequences:,} sequences judged, "
            f"{self.states:,} new states, {self.repeated:,} repeated, {self.inapplicable:,} "
            f"not applicable, {self.mirrored:,} mirror images skipped, {self.failed:,} "
            f"failed ({self.seconds:.1f} s)"
        )  # fmt: skip


@attrs.define
class BaseFailure:
    """A failure the base has too (under a change): not the change's finding."""

    reproducer: Reproducer
    attribution: Attribution


@attrs.define
class CheckResult:
    scope: Scope
    depth: int  # asked for
    reductions: Reductions
    workers: int
    levels: list[Level] = attrs.Factory(list)
    states: int = 1  # distinct states reached, the set-up world included
    seconds: float = 0.0
    failure: Judged | None = None
    reproducer: Reproducer | None = None
    attribution: Attribution | None = None
    base_failures: list[BaseFailure] = attrs.Factory(list)
    exercise: Exercise = attrs.Factory(Exercise)
    variant: str | None = None
    interrupted: bool = False  # Ctrl-C stopped it
    exhausted: bool = False  # a depth reached no new state: every deeper one is covered
    # under a change: failing sequences the base has too (never extended; the first of
    # each kind is replayed on the base, the rest are counted)
    base_failing: int = 0

    @property
    def completed(self) -> int:
        """The deepest depth whose every sequence was judged."""
        done = 0
        for level in self.levels:
            if not level.complete:
                break
            done = level.depth
        return self.depth if self.exhausted else done

    @property
    def sequences(self) -> int:
        return sum(level.sequences for level in self.levels)

    def verdict(self) -> str:
        failed = 1 if self.failure is not None else 0
        if failed and not self.failure.sequence:
            return f"violation in the world of scope {self.scope.name} before any step"
        if failed:
            return (
                f"violation at depth {len(self.failure.sequence)} over scope {self.scope.name} "
                f"after {self.sequences:,} sequences judged without one (every shorter "
                f"sequence holds: depth {self.completed} complete)"
            )
        where = f"depth {self.completed} complete" if self.completed else "no depth complete"
        judged = sum(level.sequences for level in self.levels if level.complete)
        if self.completed < self.depth:
            why = "interrupted (Ctrl-C)" if self.interrupted else "cut short"
            partial = next((lv for lv in self.levels if not lv.complete), None)
            done = f" after {partial.run:,} of depth {partial.depth}'s {partial.planned:,}"
            where += f" (of {self.depth} asked: {why}{done if partial else ''})"
        base = f" ({_count(self.base_failing, 'failing sequence')} the base has too, not extended)"
        return (
            f"{where} over scope {self.scope.name}: {_count(judged, 'sequence')}, "
            f"{_count(self.states, 'distinct state')}, {_count(failed, 'violation')}"
            + (base if self.base_failing else "")
        )

    def to_json(self, path: str | None = None) -> dict:
        failure = self.failure
        return {
            "scope": self.scope.name,
            "letters": len(self.scope.alphabet),
            "depth": self.depth,
            "completed": self.completed,
            "verdict": self.verdict(),
            "sequences": self.sequences,
            "states": self.states,
            "seconds": round(self.seconds, 3),
            "workers": self.workers,
            "reductions_off": self.reductions.off(),
            "levels": [attrs.asdict(level) for level in self.levels],
            "change": self.exercise.to_json(),
            "base_failures": [f.attribution.to_json() for f in self.base_failures],
            "base_failing": self.base_failing,
            "finding": None if failure is None else {
                "depth": len(failure.sequence),
                "steps": [step.to_json() for step in self.reproducer.steps],
                "violations": list(failure.violations),
                "error": failure.error,
                "at_quiescence": failure.at_quiescence,
                "attribution": self.attribution and self.attribution.to_json(),
                "reproducer": path,
            },
        }  # fmt: skip


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


class _Symmetry:
    """Which sequences are the canonical ones of their mirror images: the members of each
    symmetric group are first named in the group's order."""

    def __init__(self, scope: Scope) -> None:
        # a name the moment (the prefix) mentions is no longer interchangeable
        named = {n for step in scope.prefix for g in scope.symmetric for n in mentions(step, g)}
        groups = (tuple(n for n in group if n not in named) for group in scope.symmetric)
        self.groups = tuple(group for group in groups if len(group) > 1)
        self.named = [
            [mentions(step, frozenset(group)) for group in self.groups] for step in scope.alphabet
        ]

    def canonical(self, sequence: tuple[int, ...]) -> bool:
        for g, group in enumerate(self.groups):
            order: list[str] = []
            for letter in sequence:
                order += [n for n in self.named[letter][g] if n not in order]
            if order != list(group[: len(order)]):
                return False
        return True


def check(
    scope: Scope,
    depth: int,
    *,
    workers: int = 1,
    pool=None,
    variant: str | None = None,
    base: str | None = None,
    against: str | None = None,
    reductions: Reductions = Reductions(),
    seconds: float | None = None,
    progress: Callable[[str], None] = lambda line: None,
    stop_file: str | None = None,
) -> CheckResult:
    """Judge every sequence of up to ``depth`` letters of ``scope`` (within ``seconds``),
    on ``pool`` (``submit``-ting shares: a local pool or a Dask cluster) or here. A
    failure under ``variant`` is replayed on the base (``against``: that version, as
    ``simkit compare --base`` names it; else the protocol as specified). ``stop_file``: a
    path the workers can see that outlives ``pool`` (its shares stop at their next
    sequence once it exists: after a failure, or Ctrl-C)."""
    start = wall_clock()
    if not available():  # no fork here: every sequence is replayed from a fresh world
        reductions = attrs.evolve(reductions, snapshots=False)
    search = _Search(
        CheckResult(scope, depth, reductions, workers, variant=variant),
        variant, base, against, pool,
        deadline=None if seconds is None else epoch_ms() / 1000 + seconds,
        stop=None if stop_file is None else Path(stop_file),
    )  # fmt: skip
    try:
        search.levels(progress)
    except KeyboardInterrupt:  # Ctrl-C: what completed before it stands
        search.result.interrupted = True
        search.stopping()
    search.result.seconds = wall_clock() - start
    return search.result


@attrs.define
class _Search:
    """One check's run: its settings, and what it has seen so far across depths (the
    states' digests, the ways the base fails too)."""

    result: CheckResult
    variant: str | None
    base: str | None
    against: str | None
    pool: object
    deadline: float | None  # epoch seconds
    stop: Path | None  # the file that tells the workers' shares to stop
    seen: set[str] = attrs.Factory(set)
    present: set[str] = attrs.Factory(set)  # kinds of failure the base has too
    cut: bool = False  # a share met the deadline

    def stopping(self) -> None:
        if self.stop is not None:
            self.stop.touch()  # the shares still running stop at their next sequence

    def levels(self, progress) -> None:
        """Depth after depth, until the depth asked for, a failure, the deadline, or
        nothing new to extend."""
        result, scope = self.result, self.result.scope
        symmetry = _Symmetry(scope) if result.reductions.symmetry else None
        frontier: list[tuple[int, ...]] = [()]
        for d in range(1, result.depth + 1):
            level = Level(d)
            result.levels.append(level)
            began = wall_clock()
            jobs = _extensions(frontier, len(scope.alphabet), symmetry, level)
            shares = [
                self._share(part) for part in _split(jobs, _parts(level.planned, result.workers))
            ]
            frontier = []
            for share_result in _run(shares, self.pool, lambda: self.done):
                self._read(share_result, level, frontier)
                level.seconds = wall_clock() - began
                progress(f"  {level.line()}")
            level.seconds = wall_clock() - began
            level.complete = not self.cut and result.failure is None
            result.states = len(self.seen) or 1
            progress(level.line(self._ending(level)))
            if not level.complete:
                return
            if not frontier:  # every state of this depth was reached before: no deeper one
                result.exhausted = True
                return

    @property
    def done(self) -> bool:
        return self.result.failure is not None or self.cut

    def _share(self, part) -> Share:
        return Share(self.result.scope, part, self.variant, self.base,
                     self.result.reductions.snapshots, self.deadline,
                     stop_on_failure=self.variant is None,
                     stop_file=self.stop and str(self.stop), depth=self.result.depth)  # fmt: skip

    def _ending(self, level: Level) -> str:
        if self.result.failure is not None:
            return f"stopped at a violation after {level.run:,} of {level.planned:,}"
        if self.cut:
            return f"cut short by the budget after {level.run:,} of {level.planned:,}"
        return "complete"

    def _read(self, share: ShareResult, level: Level, frontier: list) -> None:
        """A share's results, in order: counts, the states kept to extend, the failure."""
        result = self.result
        if share.root:
            self.seen.add(share.root)
        if share.setup_failure is not None and result.failure is None:
            self._failed(share.setup_failure)
        self.cut = self.cut or share.cut
        for judged in share.judged:
            if judged.exercise is not None:
                result.exercise.merge(judged.exercise)
            if judged.digest is None and not judged.failed:
                level.inapplicable += 1
                continue
            if judged.failed:
                level.failed += 1
                if result.failure is None:
                    self._failed(judged)
                continue
            level.sequences += 1
            new = judged.digest not in self.seen
            self.seen.add(judged.digest)
            level.states += new
            if new or not result.reductions.states:
                frontier.append(judged.sequence)
            else:
                level.repeated += 1

    def _failed(self, judged: Judged) -> None:
        """The first failure (under a change: attributed, one the base has too kept aside,
        only the first of each kind replayed on the base)."""
        result = self.result
        steps = result.scope.steps(judged.sequence)
        repro = Reproducer(
            machine="adversary" if any(turns_malicious(step) for step in steps) else "honest",
            params=result.scope.params, steps=steps, variant=self.variant, base=self.base,
            violations=judged.violations,
        )  # fmt: skip
        if self.variant is not None:
            kind = _kind(judged)
            if kind in self.present:  # the base fails this way too: counted, not replayed
                result.base_failing += 1
                return
            attribution, own = attributed(repro, against=self.against)
            if attribution.verdict == PRESENT:
                self.present.add(kind)
                result.base_failing += 1
                result.base_failures.append(BaseFailure(own or repro, attribution))
                return
            result.attribution = attribution
        result.failure, result.reproducer = judged, repro
        self.stopping()


def _kind(judged: Judged) -> str:
    """What broke, in a word: the first violation's invariant, or the crash."""
    return judged.violations[0]["invariant"] if judged.violations else "crash"


def _extensions(frontier, letters: int, symmetry: _Symmetry | None, level: Level) -> list:
    """Each prefix kept with the letters that extend it (mirror images left out)."""
    jobs = []
    for prefix in frontier:
        kept = tuple(
            letter
            for letter in range(letters)
            if symmetry is None or symmetry.canonical((*prefix, letter))
        )
        level.mirrored += letters - len(kept)
        jobs.append((prefix, kept))
    level.planned = sum(len(kept) for _, kept in jobs)
    return jobs


def _parts(sequences: int, workers: int) -> int:
    return max(1, workers * SHARES_PER_WORKER, -(-sequences // SHARE_SEQUENCES))


def _split(jobs, parts: int):
    """Cut the (prefix, letters) jobs into ``parts`` contiguous runs of about as many
    sequences each, a prefix's letters split where a cut falls."""
    pairs = [(prefix, letter) for prefix, letters in jobs for letter in letters]
    size = max(1, -(-len(pairs) // parts))
    for start in range(0, len(pairs), size):
        grouped: dict[tuple[int, ...], list[int]] = {}
        for prefix, letter in pairs[start : start + size]:
            grouped.setdefault(prefix, []).append(letter)
        yield tuple((prefix, tuple(letters)) for prefix, letters in grouped.items())


def _run(shares: list[Share], pool, done: Callable[[], bool]):
    """Each share's result in order; once ``done()`` (a failure or a cut), the shares
    after it are cancelled (those before it still run: one may hold an earlier failure)."""
    if pool is None:
        for share in shares:
            if done():
                return
            yield explore(share)
        return
    futures = [pool.submit(explore, share) for share in shares]
    try:
        for future in futures:
            yield future.result()
            if done():
                break
    finally:
        for future in futures:
            future.cancel()


__all__ = ["CheckResult", "Reductions", "check"]
