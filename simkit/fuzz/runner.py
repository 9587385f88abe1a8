"""The fuzzing loop behind ``simkit fuzz``.

It alternates the honest and the adversary state machines in short chunks of
examples until an invariant breaks, then shrinks the failing run on its step list
(``simkit.fuzz.shrink``: fewer actors, faults and ceremonies, steps and waits). Each
chunk is seeded from ``--seed``, so a session is repeatable (a seeded Hypothesis run
uses no example database: failures are kept as reproducers instead).

One budget covers the search and the shrinking (or shrinking gets its own). It is
checked as each example starts and before each shrink attempt: an example runs to its
end, because a world stopped mid-step could not be torn down. Once the search budget
is spent the runner raises ``_BudgetSpent``, a KeyboardInterrupt, which Hypothesis
lets through at once without saving the interrupted example as a failure; Ctrl-C
stops the run the same way at the next example or attempt. Either way the result is
the best failing run so far: the first one, then each shorter one the shrinker finds,
each written as a reproducer the moment it is seen.
"""

import functools
import itertools
from collections.abc import Callable
from pathlib import Path

import attrs
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis.errors import HypothesisException

from simkit.ctrl_c import CtrlC, deferred_ctrl_c
from simkit.errors import describe
from simkit.fuzz.attribution import CAUSED, PRESENT, STACK, Attribution, attributed
from simkit.fuzz.engine import ChunkRunner, Stop, replaying_final
from simkit.fuzz.machine import InvariantViolation, WorldMachine, machine_for
from simkit.fuzz.reproducer import Reproducer, replay
from simkit.fuzz.shrink import Shrinker, Shrunk, Target
from simkit.fuzz.steer import Steering
from simkit.invariants import Monitor, Violation
from simkit.realtime import wall_clock
from simkit.sim.behaviours import Coverage
from simkit.sim.costs import Costs
from simkit.sim.exercise import Exercise
from simkit.sim.variant import HONEST, Variant

CHUNK_EXAMPLES = 5


class _BudgetSpent(Stop):
    """The budget ran out: stop Hypothesis at once, as Ctrl-C would."""


class _Found(Stop):
    """A violation is held (its run, as steps): stop Hypothesis before it replays the
    failing example only to report it, a whole example's time the user would wait."""


@attrs.frozen
class Budget:
    """How long a fuzz session may run. ``seconds`` of wall time cover the search and
    the shrinking; ``shrink_seconds`` gives shrinking its own time from the first
    violation instead. ``examples`` bounds the search and ``shrink_attempts`` the
    shrinking by examples run: budgets that do not depend on the machine's speed
    (tests and campaign chunks use them)."""

    seconds: float
    shrink_seconds: float | None = None
    shrink_attempts: int | None = None
    examples: int | None = None

    def shrink_deadline(self, start: float, found: float) -> float:
        """When shrinking must stop, for a session that started at ``start`` and
        found its first violation at ``found``."""
        if self.shrink_seconds is not None:
            return found + self.shrink_seconds
        return start + self.seconds


@attrs.frozen
class BaseFinding:
    """A failure the search met that the base has too (``attribution.verdict`` is
    ``PRESENT``): kept in its own reproducer, not the change's finding."""

    failure: str
    reproducer: Reproducer
    attribution: Attribution
    found_after: float
    path: str | None = None

    def to_json(self) -> dict:
        return {
            "failure": self.failure, "found_after": round(self.found_after, 3),
            "reproducer": self.path, "attribution": self.attribution.to_json(),
            "steps": len(self.reproducer.steps),
        }  # fmt: skip


def keep_aside(result, failure: str, repro: Reproducer, attribution: Attribution,
               found_after: float, out: str | Path | None) -> None:  # fmt: skip
    """Add a failure the base has too (``repro``: the run on the base, with the base's
    violations) to ``result.base_findings``; the first of each invariant is written
    beside the run's own reproducer (``out``), as ``<out>.base-<invariant>.json``."""
    invariant = _invariant_of(repro)
    path = None
    if out is not None and invariant not in {_invariant_of(f.reproducer)
                                             for f in result.base_findings}:  # fmt: skip
        out = Path(out)
        path = out.with_name(f"{out.stem}.base-{invariant}{out.suffix or '.json'}")
        repro.write(path)
    found = BaseFinding(failure, repro, attribution, found_after, path and str(path))
    result.base_findings.append(found)


@attrs.define
class FuzzResult:
    examples: int = 0  # examples run before the first violation
    steps: int = 0  # steps run in every example (search and shrinking)
    seconds: float = 0.0
    invariants: list[str] = attrs.Factory(list)  # those the machines that ran check
    found_after: float | None = None  # seconds until an invariant first broke
    first_steps: int | None = None  # steps of that first failing run (before shrinking)
    shrink_attempts: int = 0  # candidate runs replayed while shrinking
    # how shrinking ended: "done" (nothing smaller fails), "off", "interrupted" (Ctrl-C),
    # or the limit that cut it off: "budget" (seconds), "attempts"
    shrinking: str | None = None
    interrupted: bool = False  # Ctrl-C stopped the run
    reproducer: Reproducer | None = None  # the best failing run so far (fewest steps)
    failure: str | None = None  # what broke in it
    error: str | None = None  # the exception's type, when it crashed instead
    coverage: Coverage = attrs.Factory(Coverage)  # behaviours reached, over every example
    exercise: Exercise = attrs.Factory(Exercise)  # how often the change ran (departures, calls)
    costs: Costs = attrs.Factory(Costs)  # what every example cost, added up
    release: tuple[str, ...] = ()  # "mix", "rollout": every world ran a release
    base: str | None = None  # the version a release started from
    seed: int | None = None  # the session's seed (--seed runs it again)
    attribution: Attribution | None = None  # whose the finding is (docs/fuzzing.md)
    base_findings: list[BaseFinding] = attrs.Factory(list)  # failures the base has too

    def to_json(self, reproducer_path: str | None = None) -> dict:
        """What ``simkit fuzz --json`` writes: the budget spent, what was checked and
        reached, and the finding (with its reproducer's path) if there is one."""
        return {
            "seed": self.seed,
            "examples": self.examples,
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "steps_per_second": round(self.steps / self.seconds, 2) if self.seconds else 0,
            "invariants": self.invariants,
            "release": {"kinds": list(self.release), "base": self.base} if self.release else None,
            "change": self.exercise.to_json(),
            "behaviours": self.coverage.to_json(),
            "costs": self.costs.to_json(),
            "base_findings": [finding.to_json() for finding in self.base_findings],
            "finding": None
            if self.failure is None
            else {
                "failure": self.failure,
                "attribution": self.attribution and self.attribution.to_json(),
                "found_after": self.found_after,
                "first_steps": self.first_steps,
                "steps": len(self.reproducer.steps) if self.reproducer else None,
                "shrinking": self.shrinking,
                "reproducer": reproducer_path if self.reproducer else None,
            },
        }


def fuzz(
    variant: Variant,
    *,
    seconds: float,
    seed: int,
    max_steps: int,
    shrink_seconds: float | None = None,
    shrink_attempts: int | None = None,
    examples: int | None = None,
    variant_ref: str | None = None,
    shrink: bool = True,
    out: str | Path | None = None,
    progress: Callable[[FuzzResult], None] = lambda result: None,
    written: Callable[[FuzzResult], None] = lambda result: None,
    based: Callable[[FuzzResult], None] = lambda result: None,
    against: str | None = None,
    classic: bool = False,
    device_model: bool = True,
    shrink_workers: int = 1,
    release: frozenset = frozenset(),
    base: Variant | None = None,
    base_ref: str | None = None,
    neighbours: tuple[Variant, Variant] | None = None,
    steer: bool = True,
) -> FuzzResult:
    """Fuzz ``variant`` within the budget; stop at the first violation and shrink it
    (unless ``shrink`` is off) within what is left of the budget.

    ``progress`` is called as each example starts (raising KeyboardInterrupt there
    stops the run as Ctrl-C does); ``written`` each time ``result.reproducer``, the
    best failing run so far, was written to ``out``; ``based`` each time a failure the
    base has too was kept aside (``result.base_findings``: under a change, a failing
    run is replayed on the base first, docs/fuzzing.md "Whose finding it is"; ``against``:
    the base, when not a release's old version or the protocol as specified).
    ``classic`` runs the rules and draws of commit 685eb33's machines (a benchmark's
    equal work); ``device_model`` off measures what the device model costs (``simkit bench fuzz``);
    ``shrink_workers`` processes replay shrink candidates at once. ``release``:
    ``rollout`` and/or ``mix``: every world runs a release from ``base`` (``base_ref``
    names it; default the protocol as specified) to ``variant`` (docs/releases.md).
    ``neighbours``: (the previous version, the next one): every third chunk runs a
    release instead, rolled out and mixed, in turn from the previous version to
    ``variant`` and from ``variant`` to the next (``simkit fuzz`` of this code).
    ``steer``: a change (not the protocol as specified) is fuzzed steered toward where it
    departs from the spec (simkit.fuzz.steer); off, to measure what steering does.
    """
    result = FuzzResult(seed=seed)
    budget = Budget(seconds, shrink_seconds, shrink_attempts, examples)
    if release:
        base, base_ref = base or HONEST, base_ref or HONEST.name
        result.release, result.base = tuple(sorted(release)), base.name
    steering = Steering() if steer and variant != HONEST else None
    session = _Session(result, budget, variant_ref, out, progress, written, steering)
    session.variant, session.based, session.against = variant, based, against
    phases = [Phase.explicit, Phase.reuse, Phase.generate]  # shrinking is simkit's own
    old = base or HONEST
    machines = [
        machine_for(variant, honest, classic, device_model, old, release, base_ref, None, steering)
        for honest in (True, False)
    ]
    if neighbours is not None and not release:
        both = frozenset({"mix", "rollout"})
        previous, upcoming = neighbours
        into = machine_for(variant, True, classic, device_model, previous, both, previous.name)
        out = machine_for(
            upcoming, True, classic, device_model, variant, both, variant.name, upcoming.name
        )
        machines = [*machines, into, *machines, out]
        result.release = tuple(sorted(both))
        result.base = f"{previous.name} to it, and it to {upcoming.name} (every third chunk)"
    runners = [_chunk_runner(machine, session, max_steps, phases) for machine in machines]
    # the first Ctrl-C stops the run before the next example starts (a world
    # interrupted mid-step could not be torn down); a second one interrupts at once
    with deferred_ctrl_c(session.ctrl_c):
        for chunk in itertools.count():
            run_chunk = runners[chunk % len(runners)]  # honest, adversary (, release) in turn
            if steering is not None:
                steering.commit()
            try:
                run_chunk(seed * 1_000_003 + chunk)
            except (_BudgetSpent, _Found):
                break
            except KeyboardInterrupt:
                result.interrupted = True
                break
            except Exception:
                if result.failure is None:
                    raise  # Hypothesis's own error (a broken machine), not a finding
                break
        if result.failure is not None and not result.interrupted:
            session.shrink(shrink_workers if shrink else 0)
        if shrink:  # else whoever shrinks the run sent back replays it (``shrink_found``)
            session.hashed()
    result.seconds = wall_clock() - session.start
    result.invariants = sorted({name for honest in session.ran for name in Monitor(honest).names})
    return result


def shrink_found(
    result: FuzzResult,
    target: Target,
    *,
    start: float,
    budget: Budget,
    workers: int,
    out: str | Path | None = None,
    progress: Callable[[FuzzResult], None] = lambda result: None,
    written: Callable[[FuzzResult], None] = lambda result: None,
) -> None:
    """Shrink a failing run another process found (``result.reproducer``: a campaign's
    chunk, for ``simkit fuzz`` on every core) as ``fuzz`` shrinks its own: within
    ``budget`` from ``start``, on ``workers`` processes (0: not at all), writing each
    shorter run to ``out``."""
    session = _Session(result, budget, None, out, progress, written, None)
    session.start, session.target = start, target
    with deferred_ctrl_c(session.ctrl_c):
        if not result.interrupted:
            session.shrink(workers)
        session.hashed()
    result.seconds = wall_clock() - start


def _chunk_runner(machine: type[WorldMachine], session: "_Session", max_steps: int, phases):
    """Run chunks of ``machine``'s examples, each under its seed, checking the budget
    before each example (and each step: an example still running when the budget ends
    is cut) and keeping each failing run."""
    machine.before_step = staticmethod(session.before_step)
    return ChunkRunner(
        machine,
        settings(
            max_examples=CHUNK_EXAMPLES,
            stateful_step_count=max_steps,
            deadline=None,
            database=None,  # a seeded run would drop it anyway
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
            verbosity=Verbosity.quiet,  # the runner reports the failing run itself
            phases=phases,
        ),
        functools.partial(session.example, machine.honest),
    ).run


class _Session:
    """What every example of one fuzz run shares: the clock and the budget, the best
    failing run so far, and a pending Ctrl-C."""

    def __init__(self, result, budget, variant_ref, out, progress, written, steering) -> None:
        self.result, self.budget, self.steering = result, budget, steering
        self.variant: Variant | None = None  # the run's (whose change ``exercise`` counts)
        self.variant_ref, self.out = variant_ref, out
        self.progress, self.written = progress, written
        self.based: Callable[[FuzzResult], None] = lambda result: None
        self.against: str | None = None  # the base findings are judged against
        self.start = wall_clock()
        self.target: Target | None = None  # how the first failing run failed
        self._shrink_steps = 0
        self.ctrl_c = CtrlC()
        self.ran: set[bool] = set()  # machine.honest of the machines that ran an example

    def example(self, honest: bool, run, machine) -> None:
        """One example of a machine (``honest`` or not): check the budget before it,
        keep it if it fails, count what it did."""
        self.before_example()
        self.ran.add(honest)
        try:
            run()
        except HypothesisException:
            raise  # Hypothesis's own control flow or error, not a finding
        except Exception as exc:
            if self.failed(machine(), honest, exc):
                raise  # the search stops at the change's own finding
            # else the base fails too: kept aside, and the search goes on
        finally:
            last = machine()
            self.result.steps += len(last.steps) if last else 0
            if last is not None and last.driver is not None:
                ran = last.world.exercise()
                self.result.coverage.merge(last.world.coverage)
                self.result.costs.merge(last.world.cost())
                final = replaying_final()  # Hypothesis runs the failing example again
                if last.world.variant is self.variant and not final:  # not a neighbour's
                    self.result.exercise.merge(ran)
                if self.steering is not None and not final:
                    name = type(last).__name__
                    self.steering.learn(name, last.params, last.steps, last.first_departure, ran)

    def before_example(self) -> None:
        if replaying_final():
            if self.result.failure is not None:
                raise _Found
            return  # a failure simkit did not see (Hypothesis's own): let it report it
        result, now = self.result, wall_clock()
        result.seconds = now - self.start
        if self.ctrl_c.pressed:
            raise KeyboardInterrupt
        if result.seconds >= self.budget.seconds or result.examples == self.budget.examples:
            raise _BudgetSpent
        result.examples += 1
        self.progress(result)

    def before_step(self) -> None:
        """The search budget is hard: an example still running when it ends is cut."""
        if self.result.found_after is None and wall_clock() - self.start >= self.budget.seconds:
            raise _BudgetSpent

    def shrink(self, workers: int) -> None:
        """Shrink the failing run within the shrink budget (``workers`` 0: not at all)."""
        result = self.result
        if not workers:
            result.shrinking = "off"
            return
        if result.reproducer is None:
            result.shrinking = "done"  # it broke before its world existed
            return
        deadline = self.budget.shrink_deadline(self.start, self.start + result.found_after)
        shrinker = Shrinker(
            result.reproducer, self.target,
            deadline=deadline, attempts=self.budget.shrink_attempts, workers=workers,
            better=self.better, tried=self.tried,
        )  # fmt: skip
        try:
            shrunk = shrinker.run()
        except KeyboardInterrupt:
            result.interrupted, result.shrinking = True, "interrupted"
            return
        result.shrinking = shrunk.ended

    def tried(self, shrunk: Shrunk) -> None:
        """After each batch of shrink candidates: count them, report, heed Ctrl-C."""
        result = self.result
        result.steps += shrunk.steps - self._shrink_steps
        self._shrink_steps = shrunk.steps
        result.shrink_attempts = shrunk.attempts
        result.seconds = wall_clock() - self.start
        self.progress(result)
        if self.ctrl_c.pressed:
            raise KeyboardInterrupt

    def better(self, repro: Reproducer) -> None:
        """A shorter failing run: keep it and write it at once."""
        self.result.reproducer = repro
        if repro.violations:
            self.result.failure = "\n".join(str(Violation(**v)) for v in repro.violations[:1])
        self._write()

    def hashed(self) -> None:
        """The kept run's trace hash (a shrunk run has it from its replay; the first
        failing run gets it from one), so that a replay can say it matched."""
        repro = self.result.reproducer
        if repro is None or repro.trace_hash is not None or self.result.interrupted:
            return
        try:
            trace_hash = replay(repro).trace_hash
        except Exception:  # a run that crashes the world has no trace hash to keep
            return
        self.result.reproducer = attrs.evolve(repro, trace_hash=trace_hash)
        self._write()

    def _write(self) -> None:
        if self.out is not None:
            self.result.reproducer.write(self.out)
            self.written(self.result)

    def failed(self, machine: WorldMachine | None, honest: bool, exc: Exception) -> bool:
        """A failing run: the search's finding (True: it stops there), or, under a
        change, a failure the base has too (False: kept in its own reproducer, and the
        search goes on)."""
        result = self.result
        if result.found_after is not None:
            return True  # Hypothesis's replay of the same failing example
        found_at = wall_clock() - self.start  # when it broke (the base's replay comes after)
        if found_at > self.budget.seconds:
            raise _BudgetSpent from None  # past the search budget: no finding, as at a step
        first = _first_failure(exc)
        violations = first.violations if isinstance(first, InvariantViolation) else ()
        failure = str(first) if violations else describe(first)
        error = None if violations else type(first).__name__
        repro = None
        if machine is not None and machine.params is not None:
            repro = Reproducer(
                machine="honest" if honest else "adversary",
                params=machine.params,
                steps=tuple(machine.steps),
                variant=machine.variant_ref or self.variant_ref,
                violations=tuple(v.to_json() for v in violations),
                base=machine.base_ref if machine.release else None,
                fuzz_seed=result.seed,
            )
        attribution, own = None, None
        judged = self.variant != HONEST or self.against is not None  # else the stack's own
        if repro is not None:
            attribution, own = (
                attributed(repro, against=self.against) if judged else (Attribution(STACK), None)
            )
        if attribution is not None and attribution.verdict == PRESENT:
            self._kept_aside(failure, own, attribution, found_at)
            return False
        result.found_after = found_at
        result.first_steps = len(machine.steps) if machine else 0
        result.failure, result.error, result.attribution = failure, error, attribution
        if repro is None:
            return True  # it broke before its world existed: nothing to replay
        change = attribution is not None and attribution.verdict == CAUSED
        invariant = violations[0].invariant if violations else None
        self.target = Target(invariant, error, change, self.against)
        result.reproducer = repro
        self._write()
        return True

    def _kept_aside(self, failure, repro, attribution, found_after: float) -> None:
        """A failure the base has too: kept (``keep_aside``), reported at once and at
        the end; the search goes on."""
        keep_aside(self.result, failure, repro, attribution, found_after, self.out)
        self.based(self.result)


def _invariant_of(repro: Reproducer) -> str:
    return repro.violations[0]["invariant"] if repro.violations else "crash"


def _first_failure(exc: BaseException) -> BaseException:
    """The first thing that broke in a run: when an invariant breaks after a step,
    the teardown's checks at quiescence may raise again with it as the context."""
    while isinstance(exc.__context__, InvariantViolation):
        exc = exc.__context__
    return exc
