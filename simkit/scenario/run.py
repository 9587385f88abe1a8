"""Running a scenario: the world, the invariants during and after it, the expectations
(an invariant that did not run is "not checked", never a pass: simkit.invariants.verdicts)."""

import attrs

from simkit.invariants import Monitor
from simkit.invariants.verdicts import InvariantCheck, first_violation, verdicts
from simkit.scenario.load import Scenario
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
    invariants: tuple[InvariantCheck, ...]
    world: World = attrs.field(eq=False, repr=False)

    @property
    def passed(self) -> bool:
        """Every expectation met and no checked invariant broken."""
        return all(c.passed for c in self.expectations) and all(
            i.passed is not False for i in self.invariants
        )

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
            "invariants": [i.to_json() for i in self.invariants],
        }
        first = first_violation(self.world.violations)
        if first is not None:
            out["violation"] = first
        return out


def run_scenario(scenario: Scenario) -> ScenarioResult:
    listed = scenario.expect.invariants
    monitor = Monitor(scenario.honest, only=listed)
    world = run_world(scenario.spec, scenario.variant, monitor=monitor)
    return ScenarioResult(
        scenario,
        scenario.spec.seed,
        world.trace.trace_hash(),
        tuple(_expectations(scenario, world)),
        verdicts(monitor, world.violations, listed=listed),
        world,
    )


def setup_end(trace) -> int:
    """The trace position where the world's setup ended (0 if the trace does not say)."""
    for event in trace:
        if (
            event.kind == "event"
            and event.actor == "world"
            and event.fields.get("name") == "setup.done"
        ):
            return event.seq
    return 0


def _named(world: World) -> list:
    """Every event, fault and scheduled action that carries a name."""
    return [e for e in world.trace if e.kind in ("event", "fault") and "name" in e.fields]


def _expectations(scenario: Scenario, world: World):
    expect = scenario.expect
    if expect.settled is not None:
        settled = world.settled_at is not None
        yield Check(
            "settled" if expect.settled else "never settles",
            settled == expect.settled,
            f"settled at t={world.settled_at:.1f} s" if settled else "did not settle",
        )
    named = _named(world)
    alarmed = {}
    for event in named:
        if event.fields["name"] == "log.alarm":
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
    for device, reason in expect.rejections:
        event = next(
            (e for e in named if e.fields["name"] == "record.rejected"
             and (e.actor, e.fields.get("reason")) == (device, reason)),
            None,
        )  # fmt: skip
        yield Check(f"{device} rejects ({reason})", event is not None, _first(event))
    boundary = setup_end(world.trace)
    for device, name, phase in expect.events:
        during = [e for e in named if (e.seq < boundary) == (phase == "setup")]
        event = _find(during, device, name)
        label = (
            f"{name}"
            + (f" on {device}" if device else "")
            + (" during setup" if phase == "setup" else "")
        )
        detail = _first(event)
        if event is None and phase == "run" and _find(named, device, name) is not None:
            detail = "only during setup, before the scenario's run began"
        yield Check(label, event is not None, detail)
    for device, name in expect.absent:
        event = _find(named, device, name)
        detail = "" if event is None else _first(event)
        yield Check(f"no {name}" + (f" on {device}" if device else ""), event is None, detail)


def _find(events, device: str | None, name: str):
    return next(
        (e for e in events if e.fields["name"] == name and (device is None or e.actor == device)),
        None,
    )


def _first(event) -> str:
    if event is None:
        return "did not happen"
    return f"first at t={event.t:.1f} s by {event.actor} (trace#{event.seq})"
