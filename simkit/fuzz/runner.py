"""The fuzzing loop behind ``simkit fuzz``.

It alternates the honest and the adversary state machines in short chunks of
examples until the time budget ends or an invariant breaks. Each chunk is seeded
from ``--seed`` (so a session is repeatable), and Hypothesis's example database
under ``.hypothesis/`` replays known failures first. On a failure Hypothesis
shrinks it; the shrunk run's steps become a reproducer.
"""

import contextlib
from collections.abc import Callable
from pathlib import Path

import attrs
from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.stateful import get_state_machine_test

from simkit.bench import wall_clock
from simkit.fuzz.machine import InvariantViolation, WorldMachine, machine_for
from simkit.fuzz.reproducer import Reproducer
from simkit.invariants import Monitor
from simkit.sim.behaviours import Coverage
from simkit.sim.variant import Variant

CHUNK_EXAMPLES = 5


@attrs.define
class FuzzResult:
    examples: int = 0
    steps: int = 0
    seconds: float = 0.0
    invariants: list[str] = attrs.Factory(list)
    found_after: float | None = None  # seconds until an invariant first broke (before shrinking)
    failing: WorldMachine | None = None  # the last run that broke an invariant (the shrunk one)
    reproducer: Reproducer | None = None
    failure: str | None = None
    coverage: Coverage = attrs.Factory(Coverage)  # behaviours reached, over every example


def _counted(machine: type[WorldMachine], result: FuzzResult, start: float):
    """Count examples and steps as the machine runs them, and note when an invariant
    first breaks (shrinking runs afterwards)."""

    class Counted(machine):
        def start(self, params):
            result.examples += 1
            super().start(params)

        def do(self, **step):
            result.steps += 1
            super().do(**step)

        def invariants_hold(self):
            with _noting(result, start, self):
                super().invariants_hold()

        def teardown(self):
            try:
                with _noting(result, start, self):
                    super().teardown()
            finally:
                if self.driver is not None:
                    result.coverage.merge(self.world.coverage)

    Counted.__name__ = machine.__name__
    return Counted


def fuzz(
    variant: Variant,
    *,
    seconds: float,
    seed: int,
    max_steps: int,
    variant_ref: str | None = None,
    database: str | Path | None = ".hypothesis/examples",
    shrink: bool = True,
    progress: Callable[[FuzzResult], None] = lambda result: None,
) -> FuzzResult:
    """Fuzz ``variant`` for ``seconds`` of wall time; stop at the first violation
    (shrunk unless ``shrink`` is off)."""
    result = FuzzResult()
    result.invariants = sorted({*Monitor(True).names, *Monitor(False).names})
    start = wall_clock()
    chunk = 0
    while wall_clock() - start < seconds:
        honest = chunk % 2 == 0
        machine = _counted(machine_for(variant, honest=honest), result, start)
        test = get_state_machine_test(
            machine,
            settings=settings(
                max_examples=CHUNK_EXAMPLES,
                stateful_step_count=max_steps,
                deadline=None,
                database=DirectoryBasedExampleDatabase(str(database)) if database else None,
                suppress_health_check=list(HealthCheck),
                report_multiple_bugs=False,
                phases=[Phase.explicit, Phase.reuse, Phase.generate, *([Phase.shrink] * shrink)],
            ),
        )
        failed = True
        try:
            hypothesis_seed(seed * 1_000_003 + chunk)(test)()
            failed = False
        except InvariantViolation as exc:
            result.failure = str(exc)
            _keep(result, machine, variant_ref, honest, exc)
        except Exception as exc:  # a crash in the stack under test is a finding too
            result.failure = f"{type(exc).__name__}: {exc}"
            _keep(result, machine, variant_ref, honest, None)
        chunk += 1
        result.seconds = wall_clock() - start
        progress(result)
        if failed:
            return result
    return result


@contextlib.contextmanager
def _noting(result: FuzzResult, start: float, machine: WorldMachine):
    try:
        yield
    except Exception:
        if result.found_after is None:
            result.found_after = wall_clock() - start
        result.failing = machine
        raise


def _keep(result, machine, variant_ref, honest, exc) -> None:
    """Keep the steps of the last run that broke an invariant: after shrinking (even a
    shrink Hypothesis gave up on) that is the example it reports, while the last run
    of all may be a candidate that passed."""
    last = result.failing or machine.last
    if last is None or last.params is None:
        return
    violations = tuple(v.to_json() for v in exc.violations) if exc else ()
    result.reproducer = Reproducer(
        machine="honest" if honest else "adversary",
        params=last.params,
        steps=tuple(last.steps),
        variant=variant_ref,
        violations=violations,
    )
