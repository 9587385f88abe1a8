"""How often a protocol change ran (docs/variants.md, "How often the change ran").

A verdict on a change means something only if the change made a difference in the
runs it judges. Two counts say whether it did:

- **departures**: a model found a party doing otherwise than the spec, in a rule the
  variant declares it changes (``Variant.changes``). The model counts it, follows
  what the party did, and leaves its consequences to the other invariants.
- **calls**: each method a variant's classes override, counted as the world's parties
  call it (a variant that declares no rule is judged by the models themselves; that
  its methods ran is all that says it was exercised).

A run in which a declared change never departed, or an undeclared one never ran, gives
no verdict (exit 3): "no violation" would only say the change never mattered.
"""

import functools
import threading
import types
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import attrs

from simkit.sim.variant import HONEST

NEVER = "no verdict: the change was never exercised"

_CURRENT = threading.local()  # the calls counter of the world running in this thread


@contextmanager
def counting(calls: Counter) -> Iterator[None]:
    """Count overridden methods' calls made in this thread into ``calls`` (a world
    runs in one thread: its parties' calls are its own)."""
    before = getattr(_CURRENT, "calls", None)
    _CURRENT.calls = calls
    try:
        yield
    finally:
        _CURRENT.calls = before


def overridden(cls: type, base: type) -> dict[str, type]:
    """The methods ``cls`` defines over ``base``'s, by name, with the class defining each."""
    found: dict[str, type] = {}
    for klass in cls.__mro__:
        if issubclass(base, klass):
            break
        for name, value in vars(klass).items():
            if name.startswith("__") or name in found:
                continue
            if isinstance(value, types.FunctionType | classmethod | staticmethod):
                found[name] = klass
    return found


@functools.cache
def counted(cls: type, base: type) -> type:
    """``cls`` with each method it overrides over ``base`` counted as it runs (``cls``
    itself when it overrides nothing: the protocol as specified)."""
    methods = overridden(cls, base)
    if not methods:
        return cls
    body = {"__qualname__": cls.__qualname__, "__module__": cls.__module__, "counts": cls}
    for name, klass in methods.items():
        body[name] = _wrapped(f"{klass.__qualname__}.{name}", vars(klass)[name])
    return type(cls.__name__, (cls,), body)


def running_class(party: object) -> type:
    """The class a party runs, as its version names it (not the class counting it)."""
    return vars(type(party)).get("counts", type(party))


def _wrapped(key: str, value):
    kind = type(value) if isinstance(value, classmethod | staticmethod) else None
    function = value.__func__ if kind else value

    @functools.wraps(function)
    def method(*args, **kwargs):
        calls = getattr(_CURRENT, "calls", None)
        if calls is not None:
            calls[key] += 1
        return function(*args, **kwargs)

    return kind(method) if kind else method


@attrs.define
class Exercise:
    """How often a change ran in one world, or (``merge``) in many: departures per
    declared rule, calls per overridden method, and in how many worlds each happened.
    ``stopped``: what a model stopped judging because it could not follow the change
    (the graph or party, and why)."""

    declared: tuple[str, ...] = ()  # the rules the versions of the run declare
    changed: bool = False  # a version of the run is not the protocol as specified
    departures: Counter = attrs.Factory(Counter)  # rule -> departures
    calls: Counter = attrs.Factory(Counter)  # "Class.method" -> calls
    examples: Counter = attrs.Factory(Counter)  # rule or method -> worlds it happened in
    worlds: int = 0  # the worlds counted (examples, scenario runs)
    stopped: dict[str, str] = attrs.Factory(dict)
    after: int = 0  # behaviours first reached after a world's first departure, summed

    @property
    def exercised(self) -> bool:
        """Whether the change made a difference: a declared rule departed, or (a change
        that declares none) an overridden method ran."""
        if self.declared:
            return any(self.departures.values())
        return any(self.calls.values())

    @property
    def verdict(self) -> str | None:
        """None when the run may give a verdict, else why not (``NEVER``)."""
        return NEVER if self.changed and not self.exercised else None

    @classmethod
    def of_world(cls, declared, changed, departures, calls, stopped, after) -> "Exercise":
        """One world's counts (``examples``: each rule or method that happened, once)."""
        happened = Counter({k: 1 for k, n in (*departures.items(), *calls.items()) if n})
        return cls(tuple(declared), changed, Counter(departures), Counter(calls), happened,
                   1, dict(stopped), after)  # fmt: skip

    def merge(self, other: "Exercise") -> None:
        """Add another world's (or run's) counts to these."""
        self.declared = tuple(dict.fromkeys((*self.declared, *other.declared)))
        self.changed = self.changed or other.changed
        self.departures.update(other.departures)
        self.calls.update(other.calls)
        self.examples.update(other.examples)
        self.worlds += other.worlds
        for what, why in other.stopped.items():
            self.stopped.setdefault(what, why)
        self.after += other.after

    def to_json(self) -> dict:
        return {
            "declared": list(self.declared),
            "changed": self.changed,
            "exercised": self.exercised,
            "verdict": self.verdict,
            "departures": dict(sorted(self.departures.items())),
            "calls": dict(sorted(self.calls.items())),
            "examples": dict(sorted(self.examples.items())),
            "worlds": self.worlds,
            "stopped_judging": dict(sorted(self.stopped.items())),
            "behaviours_after_departure": self.after,
        }

    @classmethod
    def from_json(cls, data: dict) -> "Exercise":
        return cls(
            tuple(data["declared"]), data["changed"], Counter(data["departures"]),
            Counter(data["calls"]), Counter(data["examples"]), data["worlds"],
            dict(data["stopped_judging"]), data["behaviours_after_departure"],
        )  # fmt: skip

    def lines(self) -> list[str]:
        """What ran, as a reviewer reads it (empty for the protocol as specified)."""
        if not self.changed:
            return []
        out = []
        if self.declared:
            counts = ", ".join(
                f"{rule}: {self.departures[rule]} in {self.examples[rule]} of {self.worlds} "
                "examples" for rule in self.declared
            )  # fmt: skip
            out.append(
                "departures from the spec in the rules the change declares (followed by the "
                f"models, judged by the other invariants): {counts}"
            )
        if self.calls or not self.declared:
            ran = ", ".join(
                f"{name} {n} in {self.examples[name]}" for name, n in sorted(self.calls.items())
            )
            out.append(f"overridden methods ran: {ran or 'none'}")
        for what, why in sorted(self.stopped.items()):
            out.append(f"the models stopped judging {what}: {why}")
        return out


def exercise_of(world) -> Exercise:
    """How often the change ran in one world: the models' departures (the relay's and
    every device's), the calls of the world variant's overridden methods, what a model
    stopped judging, and the behaviours first counted after the first departure."""
    versions = (world.versions.base, world.versions.new)
    departures, stopped = Counter(), {}
    if world.relay_oracle is not None:
        departures.update(world.relay_oracle.departures)
        stopped.update(world.relay_oracle.unjudged)
    if world.device_oracle is not None:
        for model in world.device_oracle.models.values():
            departures.update(model.departures)
    before = world.coverage_at_departure
    counts = world.coverage.counts
    after = 0 if before is None else sum(n > before[k] for k, n in counts.items())
    declared = tuple(dict.fromkeys(rule for v in versions for rule in v.changes))
    changed = world.variant != HONEST
    return Exercise.of_world(declared, changed, departures, world.calls, stopped, after)
