"""``simkit bench snapshots``: what a world snapshot costs, and where it pays.

The fuzz mix's examples are drawn by the honest machine (Hypothesis derandomized: the
same examples every run) and kept as (world, steps). Each is then run three ways, side
by side, in this process:

- **rebuilt**: set the world up, do the steps, quiesce (what ``replay`` and every
  Hypothesis example do);
- **from its own snapshot**: set up, copy, do the steps in the copy. Every fuzz example
  draws its own world, so this is the most a fuzz example could get from a snapshot: it
  still sets its world up once, and pays the copy on top;
- **continuations of one moment**: ``CONTINUATIONS`` examples' steps from one world's
  set-up: rebuilt each time, or each in a copy of the one set-up world (what ``simkit
  check`` and ``--from`` do).
"""

from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from simkit.bench import BenchRow
from simkit.fuzz.driver import WorldDriver
from simkit.fuzz.machine import machine_for
from simkit.fuzz.snapshot import copy_world
from simkit.fuzz.steps import apply_step
from simkit.invariants import Monitor
from simkit.realtime import wall_clock
from simkit.sim.variant import HONEST

CONTINUATIONS = 8


def drawn_examples(count: int) -> list[tuple]:
    """``count`` examples of the honest machine, as (world parameters, steps)."""
    kept: list[tuple] = []
    base = machine_for(HONEST, honest=True)

    class Recording(base):
        def teardown(self) -> None:
            if self.params is not None:
                kept.append((self.params, tuple(self.steps)))
            super().teardown()

    run_state_machine_as_test(
        Recording,
        settings=settings(
            max_examples=count, database=None, derandomize=True, deadline=None,
            phases=[Phase.generate], stateful_step_count=25,
            suppress_health_check=list(HealthCheck),
        ),
    )  # fmt: skip
    return kept[:count]


def _steps(driver, steps) -> str:
    monitor = Monitor(honest=True)
    monitor.step(driver.world)
    for index, step in enumerate(steps):
        apply_step(driver, step, index)
        monitor.step(driver.world)
    driver.run(driver.world.quiesce)
    monitor.final(driver.world)
    return driver.world.trace.trace_hash()


def _rebuilt(params, steps) -> tuple[str, float]:
    began = wall_clock()
    driver = WorldDriver(params.spec())
    setup = wall_clock() - began
    try:
        return _steps(driver, steps), setup
    finally:
        driver.close()


def _copied(params, runs) -> list[str]:
    driver = WorldDriver(params.spec())
    try:
        return [copy_world(driver, _steps, steps) for steps in runs]
    finally:
        driver.close()


def measure(examples: list[tuple]) -> dict:
    """Seconds per example each way (the same examples), and the set-up's share."""
    began, setups, rebuilt = wall_clock(), 0.0, []
    for params, steps in examples:
        trace, setup = _rebuilt(params, steps)
        rebuilt.append(trace)
        setups += setup
    rebuilt_s = wall_clock() - began
    began = wall_clock()
    own = [_copied(params, [steps])[0] for params, steps in examples]
    own_s = wall_clock() - began
    assert own == rebuilt, "a copied world went another way than the world rebuilt"
    moments = examples[: max(1, len(examples) // CONTINUATIONS)]
    runs = [steps for _, steps in examples[:CONTINUATIONS]]
    began = wall_clock()
    for params, _ in moments:
        for steps in runs:
            _rebuilt(params, steps)
    again_s = wall_clock() - began
    began = wall_clock()
    for params, _ in moments:
        _copied(params, runs)
    copies_s = wall_clock() - began
    n, m = len(examples), len(moments) * len(runs)
    return {
        "examples": n, "setup_share": setups / rebuilt_s,
        "rebuilt": n / rebuilt_s, "own_snapshot": n / own_s,
        "continuations_rebuilt": m / again_s, "continuations_copied": m / copies_s,
    }  # fmt: skip


def run(quick: bool = False) -> list[BenchRow]:
    examples = drawn_examples(8 if quick else 32)
    got = measure(examples)
    note = f"{got['examples']} examples of the honest machine (derandomized), same worlds"
    return [
        BenchRow("snapshots", "set-up's share of an example, rebuilt", 100 * got["setup_share"],
                 "%", note),
        BenchRow("snapshots", "fuzz-mix examples/s, each world rebuilt", got["rebuilt"], "/s"),
        BenchRow("snapshots", "fuzz-mix examples/s, each from its own world's snapshot",
                 got["own_snapshot"], "/s", "every example draws its own world"),
        BenchRow("snapshots", f"continuations/s of one moment ({CONTINUATIONS}), rebuilt",
                 got["continuations_rebuilt"], "/s"),
        BenchRow("snapshots", f"continuations/s of one moment ({CONTINUATIONS}), from a snapshot",
                 got["continuations_copied"], "/s", "simkit check, check --from"),
    ]  # fmt: skip
