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
from simkit.check.scope import Scope, malicious, mentions
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
    # under a change: failing sequences the base has too (never extended), and how they
    # fail (the first of each kind is replayed on the base; the rest are counted)
    base_failing: int = 0
    present: set[str] = attrs.Factory(set)

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
    ``simkit compare --base`` names it; else the protocol as specified)."""
    start = wall_clock()
    deadline = None if seconds is None else epoch_ms() / 1000 + seconds
    if not available():  # no fork here: every sequence is replayed from a fresh world
        reductions = attrs.evolve(reductions, snapshots=False)
    result = CheckResult(scope, depth, reductions, workers, variant=variant)
    stop = Path(stop_file) if stop_file is not None and variant is None else None
    try:
        _levels(result, scope, depth, workers, pool, variant, base, against, deadline,
                progress, stop)  # fmt: skip
    except KeyboardInterrupt:  # Ctrl-C: what completed before it stands
        result.interrupted = True
        if stop is not None:
            stop.touch()
    result.seconds = wall_clock() - start
    return result


def _levels(result, scope, depth, workers, pool, variant, base, against, deadline, progress,
            stop):  # fmt: skip
    """Depth after depth, until ``depth``, a failure, the deadline, or nothing to extend;
    ``stop``: the file that tells the workers' shares a failure was found."""
    reductions, seen = result.reductions, set()
    symmetry = _Symmetry(scope) if reductions.symmetry else None
    frontier: list[tuple[int, ...]] = [()]
    for d in range(1, depth + 1):
        level = Level(d)
        result.levels.append(level)
        began = wall_clock()
        jobs = _extensions(frontier, len(scope.alphabet), symmetry, level)
        common = (
            variant,
            base,
            reductions.snapshots,
            deadline,
            variant is None,
            stop and str(stop),
        )
        parts = _split(jobs, _parts(level.planned, workers))
        shares = [Share(scope, part, *common) for part in parts]
        frontier = []
        reading = _Level(result, level, seen, frontier, reductions, variant, base, against)
        for share_result in _run(shares, pool, reading):
            reading.read(share_result)
            if result.failure is not None and stop is not None:
                stop.touch()  # the shares still running stop at their next sequence
            level.seconds = wall_clock() - began
            progress(f"  {level.line()}")
        level.seconds = wall_clock() - began
        level.complete = not reading.cut and result.failure is None
        result.states = len(seen) or 1
        ending = "complete"
        if result.failure is not None:
            ending = f"stopped at a violation after {level.run:,} of {level.planned:,}"
        elif reading.cut:
            ending = f"cut short by the budget after {level.run:,} of {level.planned:,}"
        progress(level.line(ending))
        if not level.complete:
            break
        if not frontier:  # every state of this depth was reached before: no deeper one
            result.exhausted = True
            break


class _Level:
    """Reads a depth's share results in order: counts, the states kept to extend, and
    the first failure (attributed under a change: one the base has too is kept aside)."""

    def __init__(self, result, level, seen, frontier, reductions, variant, base, against):
        self.result, self.level, self.seen, self.frontier = result, level, seen, frontier
        self.reductions, self.variant, self.base, self.against = reductions, variant, base, against
        self.cut = False
        self.present = result.present  # how the base fails too (kinds), across depths

    @property
    def done(self) -> bool:
        return self.result.failure is not None or self.cut

    def read(self, share: ShareResult) -> None:
        result, level = self.result, self.level
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
            if new or not self.reductions.states:
                self.frontier.append(judged.sequence)
            else:
                level.repeated += 1

    def _failed(self, judged: Judged) -> None:
        steps = self.result.scope.steps(judged.sequence)
        repro = Reproducer(
            machine="adversary" if any(malicious(step) for step in steps) else "honest",
            params=self.result.scope.params,
            steps=steps,
            variant=self.variant,
            base=self.base,
            violations=judged.violations,
        )
        if self.variant is not None:
            kind = _kind(judged)
            if kind in self.present:  # the base fails this way too: counted, not replayed
                self.result.base_failing += 1
                return
            attribution, own = attributed(repro, against=self.against)
            if attribution.verdict == PRESENT:
                self.present.add(kind)
                self.result.base_failing += 1
                self.result.base_failures.append(BaseFailure(own or repro, attribution))
                return
            self.result.attribution = attribution
        self.result.failure, self.result.reproducer = judged, repro


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


def _run(shares: list[Share], pool, level: _Level):
    """Each share's result in order; after a failure or a cut, the shares after it are
    cancelled (those before it still run: one of them may hold an earlier failure)."""
    if pool is None:
        for share in shares:
            if level.done:
                return
            yield explore(share)
        return
    futures = [pool.submit(explore, share) for share in shares]
    try:
        for future in futures:
            yield future.result()
            if level.done:
                break
    finally:
        for future in futures:
            future.cancel()


__all__ = ["CheckResult", "Reductions", "check"]
