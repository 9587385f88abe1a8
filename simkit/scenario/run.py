"""Running a scenario: the world, the invariants during and after it, the expectations
(an invariant that did not run is "not checked", never a pass: simkit.invariants.verdicts)."""

import attrs

from simkit.fuzz.attribution import CAUSED, PRESENT
from simkit.invariants import Monitor
from simkit.invariants.verdicts import InvariantCheck, first_violation, verdicts
from simkit.scenario.load import Scenario
from simkit.scenario.promises import PromiseCheck, judge
from simkit.sim.world import World, run_world


@attrs.frozen
class ExpectationCheck:
    name: str
    passed: bool
    detail: str = ""


@attrs.frozen
class ScenarioOutcome:
    """What a scenario run leaves once its world is gone: its verdict, checks and JSON
    summary (a run on another process sends this back)."""

    name: str
    seed: int
    trace_hash: str
    expectations: tuple[ExpectationCheck, ...]
    invariants: tuple[InvariantCheck, ...]
    passed: bool
    no_verdict: str | None
    summary: dict
    promises: tuple[PromiseCheck, ...] = ()
    # a failing run of a change: CAUSED, or PRESENT when the base fails the same checks
    attribution: str | None = None


@attrs.frozen
class ScenarioResult:
    scenario: Scenario
    seed: int
    trace_hash: str
    expectations: tuple[ExpectationCheck, ...]
    invariants: tuple[InvariantCheck, ...]
    world: World = attrs.field(eq=False, repr=False)

    @property
    def passed(self) -> bool:
        """Every expectation met and no checked invariant broken."""
        return all(c.passed for c in self.expectations) and all(
            i.passed is not False for i in self.invariants
        )

    @property
    def no_verdict(self) -> str | None:
        """Why a run that passed says nothing of its change: the change never made a
        difference (docs/variants.md); None otherwise."""
        return self.world.exercise().verdict if self.passed else None

    @property
    def promises(self) -> tuple[PromiseCheck, ...]:
        """What the description promises, each judged by the checks it names."""
        return judge(self.scenario.promises, self.expectations, self.invariants)

    def failed(self) -> set[str]:
        """The checks that failed: expectations and invariants, by name."""
        return {c.name for c in self.expectations if not c.passed} | {
            i.name for i in self.invariants if i.passed is False
        }

    def attribution(self) -> str | None:
        """Whose failure it is, for a failing run of a change: the same scenario is run
        on the base (every party on the version the change starts from); PRESENT when
        the base fails every check this run failed, else CAUSED. None for a run that
        passed or that runs no change."""
        scenario = self.scenario
        if self.passed or scenario.variant == scenario.base:
            return None
        base = run_scenario(attrs.evolve(scenario, variant=scenario.base))
        return PRESENT if self.failed() <= base.failed() else CAUSED

    def outcome(self) -> ScenarioOutcome:
        attribution = self.attribution()
        summary = self.summary()
        if attribution is not None:
            summary["attribution"] = attribution
        return ScenarioOutcome(
            self.scenario.name, self.seed, self.trace_hash, self.expectations,
            self.invariants, self.passed, self.no_verdict, summary, self.promises,
            attribution,
        )  # fmt: skip

    def summary(self) -> dict:
        """The JSON summary (``--json`` and the reports)."""
        out = {
            "scenario": self.scenario.name,
            "description": self.scenario.description,
            "seed": self.seed,
            "variant": self.scenario.variant_ref,
            "passed": self.passed,
            "trace_hash": self.trace_hash,
            "expectations": [attrs.asdict(c) for c in self.expectations],
            "promises": [p.to_json() for p in self.promises],
            "invariants": [i.to_json() for i in self.invariants],
            "behaviours": self.world.coverage.to_json(),
            "costs": self.world.cost().to_json(),
        }
        exercise = self.world.exercise()
        if exercise.changed:
            out["change"] = {**exercise.to_json(), "lines": exercise.lines()}
        first = first_violation(self.world.violations)
        if first is not None:
            out["violation"] = first
        return out


def run_scenario(scenario: Scenario, trace_path=None) -> ScenarioResult:
    """Run a scenario; with ``trace_path`` its trace streams to that file (the result's
    world then holds only the tail of it in memory)."""
    listed = scenario.expect.invariants
    firsts = Firsts(after={after for *_, after in scenario.expect.events if after})
    monitor = Monitor(scenario.honest, only=listed, observers=(firsts,))
    world = run_world(
        scenario.spec, scenario.variant, monitor=monitor, trace_path=trace_path, base=scenario.base
    )
    return ScenarioResult(
        scenario,
        scenario.spec.seed,
        world.trace.trace_hash(),
        tuple(_expectations(scenario, world, firsts)),
        verdicts(monitor, world.violations, listed=listed, world=world),
        world,
    )


class Firsts:
    """The first occurrence of each named event, fault and scheduled action, per actor,
    before and after the world's setup ended (``setup.done``), read once as the trace
    is written: what expectations ask, without keeping the trace."""

    def __init__(self, after: set[str] = frozenset()) -> None:
        self.setup_done = False
        self._first: dict[tuple[str, str | None, str | None, bool], object] = {}
        self._after = after  # events an expectation counts from (``after``)
        self._since: dict[tuple[str, str | None, str], object] = {}  # first after each

    def observe(self, event) -> None:
        if event.kind not in ("event", "fault") or "name" not in event.fields:
            return
        name = event.fields["name"]
        if event.actor == "world" and name == "setup.done":
            self.setup_done = True
        reason = event.fields.get("reason") if name in ("log.alarm", "record.rejected") else None
        for actor in (event.actor, None):
            for why in {reason, None}:
                self._first.setdefault((name, actor, why, self.setup_done), event)
            for after in self._after:
                begun = self._first.get((after, None, None, True)) or self._first.get(
                    (after, None, None, False)
                )
                if begun is not None and begun.seq < event.seq:
                    self._since.setdefault((name, actor, after), event)

    def after(self, name: str, actor: str | None, after: str):
        """The first such event that came after the first ``after`` event (any actor)."""
        return self._since.get((name, actor, after))

    def find(self, name: str, actor: str | None = None, reason: str | None = None,
             run: bool | None = None):  # fmt: skip
        """The first such event (in the run or during setup, or either: ``run=None``)."""
        found = [
            self._first.get((name, actor, reason, phase))
            for phase in ((True, False) if run is None else (run,))
        ]
        found = [e for e in found if e is not None]
        return min(found, key=lambda e: e.seq) if found else None

    def actors(self, name: str) -> set[str]:
        return {actor for (n, actor, _, _) in self._first if n == name and actor is not None}


def _expectations(scenario: Scenario, world: World, firsts: Firsts):
    expect = scenario.expect
    names = iter(expect.labels())  # in the order they are checked below
    if expect.settled is not None:
        settled = world.settled_at is not None
        yield ExpectationCheck(
            next(names),
            settled == expect.settled,
            f"settled at t={world.settled_at:.1f} s" if settled else "did not settle",
        )
    alarmed = {actor: firsts.find("log.alarm", actor) for actor in firsts.actors("log.alarm")}
    for device in expect.alarms:
        event = alarmed.get(device)
        detail = f"t={event.t:.1f} s: {event.fields['reason']}" if event else "no alarm"
        yield ExpectationCheck(next(names), event is not None, detail)
    if expect.no_alarms:
        others = sorted(set(alarmed) - set(expect.alarms))
        yield ExpectationCheck(
            next(names), not others, f"also alarmed: {', '.join(others)}" if others else ""
        )
    for device, reason in expect.rejections:
        event = firsts.find("record.rejected", device, reason)
        yield ExpectationCheck(next(names), event is not None, _first(event))
    split = firsts.setup_done
    for device, name, phase, after in expect.events:
        event = firsts.find(name, device, run=(phase != "setup") if split else None)
        detail = _first(event)
        if event is None and phase == "run" and firsts.find(name, device) is not None:
            detail = "only during setup, before the scenario's run began"
        if after and event is not None:
            event = firsts.after(name, device, after)
            began = firsts.find(after)
            detail = _first(event) if event else (
                f"{after} never happened" if began is None else f"only before {after}"
            )  # fmt: skip
        yield ExpectationCheck(next(names), event is not None, detail)
    for device, name in expect.absent:
        event = firsts.find(name, device)
        detail = "" if event is None else _first(event)
        yield ExpectationCheck(next(names), event is None, detail)


def _first(event) -> str:
    if event is None:
        return "did not happen"
    return f"first at t={event.t:.1f} s by {event.actor} (trace#{event.seq})"
