"""Running a scenario: the world, the invariants during and after it, the expectations."""

import attrs

from simkit.invariants import Monitor
from simkit.scenario.load import Scenario
from simkit.sim import spec as S
from simkit.sim.world import World, run_world


@attrs.frozen
class Check:
    name: str
    passed: bool
    detail: str = ""


@attrs.frozen
class ScenarioResult:
    scenario: Scenario
    seed: int
    trace_hash: str
    expectations: tuple[Check, ...]
    invariants: tuple[tuple[str, tuple[str, ...]], ...]  # (name, violations)
    world: World = attrs.field(eq=False, repr=False)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.expectations) and not any(v for _, v in self.invariants)

    def summary(self) -> dict:
        """The JSON summary (``--json`` and the reports)."""
        return {
            "scenario": self.scenario.name,
            "description": self.scenario.description,
            "seed": self.seed,
            "passed": self.passed,
            "trace_hash": self.trace_hash,
            "expectations": [attrs.asdict(c) for c in self.expectations],
            "invariants": [
                {"name": name, "passed": not violations, "violations": list(violations)}
                for name, violations in self.invariants
            ],
        }


def honest(spec: S.WorldSpec) -> bool:
    return not any(isinstance(a, S.Adversary | S.Steal) for a in spec.schedule)


def run_scenario(scenario: Scenario) -> ScenarioResult:
    monitor = Monitor(honest(scenario.spec))
    world = run_world(scenario.spec, monitor=monitor)
    names = scenario.expect.invariants or tuple(monitor.names)
    invariants = tuple(
        (name, tuple(str(v) for v in world.violations if v.invariant == name)) for name in names
    )
    return ScenarioResult(
        scenario,
        scenario.spec.seed,
        world.trace.trace_hash(),
        tuple(_expectations(scenario, world)),
        invariants,
        world,
    )


def _events(world, name: str) -> list:
    return [e for e in world.trace if e.kind == "event" and e.fields.get("name") == name]


def _expectations(scenario: Scenario, world: World):
    expect = scenario.expect
    if expect.settled is not None:
        settled = world.settled_at is not None
        yield Check(
            "settled" if expect.settled else "never settles",
            settled == expect.settled,
            f"settled at t={world.settled_at:.1f} s" if settled else "did not settle",
        )
    alarmed = {}
    for event in _events(world, "log.alarm"):
        alarmed.setdefault(event.actor, event)
    for device in expect.alarms:
        event = alarmed.get(device)
        detail = f"t={event.t:.1f} s: {event.fields['reason']}" if event else "no alarm"
        yield Check(f"alarm by {device}", event is not None, detail)
    if expect.no_alarms:
        others = sorted(set(alarmed) - set(expect.alarms))
        yield Check(
            "no other alarm", not others, f"also alarmed: {', '.join(others)}" if others else ""
        )
    rejected = {(e.actor, e.fields["reason"]) for e in _events(world, "record.rejected")}
    for device, reason in expect.rejections:
        yield Check(f"{device} rejects ({reason})", (device, reason) in rejected)
    seen = {(e.actor, e.fields.get("name")) for e in world.trace if e.kind == "event"}
    names = {name for _, name in seen}
    for device, name in expect.events:
        happened = (device, name) in seen if device else name in names
        yield Check(f"{name}" + (f" on {device}" if device else ""), happened)
    for device, name in expect.absent:
        happened = (device, name) in seen if device else name in names
        yield Check(f"no {name}" + (f" on {device}" if device else ""), not happened)
