"""simkit.fuzz.engine, the one place simkit uses Hypothesis internals, on the installed
Hypothesis. CI runs this file on the newest release and on the floor .ci/floors.txt
pins: a Hypothesis release that moves an internal fails here, naming the adapter,
before any fuzz run misbehaves."""

import re
from pathlib import Path

import hypothesis
import pytest
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from simkit.fuzz.engine import ChunkRunner, Stop, replaying_final

FLOORS = Path(__file__).resolve().parents[2] / ".ci" / "floors.txt"


def _settings(examples: int, phases=(Phase.generate,)) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=5,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        phases=phases,
    )


class Counter(RuleBasedStateMachine):
    """Counts up; ``fails_at``: an example that reaches it fails."""

    fails_at: int | None = None

    def __init__(self) -> None:
        super().__init__()
        self.value = 0

    @rule(by=st.integers(1, 3))
    def add(self, by):
        self.value += by
        if self.fails_at is not None and self.value >= self.fails_at:
            raise AssertionError(f"reached {self.value}")


def test_the_installed_hypothesis_is_not_below_the_floor_ci_tests():
    floor = re.search(r"^hypothesis==(\S+)$", FLOORS.read_text(), re.M)[1]
    version = tuple(int(p) for p in hypothesis.__version__.split(".")[:3])
    assert version >= tuple(int(p) for p in floor.split("."))


def test_each_example_is_seen_with_the_machine_that_ran_it():
    seen = []

    def around(run, machine):
        assert machine() is None  # not built before the example runs
        run()
        seen.append(machine())

    runner = ChunkRunner(Counter, _settings(4), around)
    runner.run(1)
    assert len(seen) == 4
    assert all(isinstance(m, Counter) for m in seen) and len({id(m) for m in seen}) == 4


def test_a_chunk_reruns_the_same_examples_under_the_same_seed():
    values = []
    runner = ChunkRunner(
        Counter, _settings(3), lambda run, machine: (run(), values.append(machine().value))
    )
    runner.run(7)
    first = list(values)
    values.clear()
    for _ in range(3):
        runner.run(7)
    assert values[:3] == first


def test_stop_ends_the_run_at_once_and_is_not_saved_as_a_failure():
    started = []

    def around(run, machine):
        started.append(1)
        if len(started) == 2:
            raise Stop
        run()

    with pytest.raises(Stop):
        ChunkRunner(Counter, _settings(10), around).run(3)
    assert len(started) == 2


def test_the_final_replay_of_a_shrunk_failure_is_told_from_the_search():
    class Failing(Counter):
        fails_at = 4

    finals = []

    def around(run, machine):
        finals.append(replaying_final())
        run()

    with pytest.raises(AssertionError):
        ChunkRunner(Failing, _settings(50, (Phase.generate, Phase.shrink)), around).run(5)
    assert finals[-1] is True and not any(finals[:-1])
