"""Scenario files: TOML that maps onto a ``WorldSpec``, a variant and the expected outcome.

Everything is checked here, at load time: an unknown key, a wrong type, a number out
of range, or a name (device, member, group, graph, invariant, event) that does not
exist when it is used is a ``ScenarioError`` naming the file, the line, the key and
what was expected. A file that loads runs. The format is in docs/scenarios.md.
"""

import re
import tomllib
from importlib import resources
from pathlib import Path

import attrs

from simkit.client.events import EVENT_KINDS
from simkit.errors import SimkitError
from simkit.invariants import NAMES, Monitor
from simkit.protocol.ids import is_safe_id
from simkit.relay import RateLimit, RelaySettings
from simkit.relay import events as relay_events
from simkit.scenario.actions import ACTIONS, Cast, check_capability, read_schedule
from simkit.scenario.promises import Promise, read_promises
from simkit.scenario.reader import Reader, ScenarioError, Source
from simkit.sim import spec as S
from simkit.sim.network import Latency, NetworkProfile
from simkit.sim.variant import HONEST, Variant
from simkit.sim.variants import load_variant, ref_resolved_from

DAY_S = 86_400
"""The longest run or drain a file may ask for (the benchmarks' simulated day)."""
PHASES = ("run", "setup")
"""When an expected event counts: after the world's setup (the default), or during it."""
WORLD_EVENTS = (
    "app.write", "app.blob-failed", "app.register-refused", "app.import-refused",
    "forged.write", "Bootstrap",
    "ceremony.failed", "ceremony.interrupted", "setup.done", "switch-off", "version",
    "version.upgrade",
)  # fmt: skip
"""What the world itself notes, besides client and relay events and scheduled actions."""


@attrs.frozen
class Expect:
    """The expected outcome: invariants that must hold, alarms and events that must
    (or must not) happen, by whom."""

    invariants: tuple[str, ...] | None = None  # None: every invariant that applies
    settled: bool | None = None
    alarms: tuple[str, ...] = ()  # devices that must raise the log alarm
    no_alarms: bool = False  # no device may alarm except those in ``alarms``
    rejections: tuple[tuple[str, str], ...] = ()  # (device, reason) that must occur
    # (device or None, name, phase, after: an event that must come first, or None)
    events: tuple[tuple[str | None, str, str, str | None], ...] = ()
    absent: tuple[tuple[str | None, str], ...] = ()  # (device or None, name): never, anywhere

    def labels(self) -> tuple[str, ...]:
        """Each expectation's name, in the order they are checked: what a report shows
        and a promise names."""
        out = [] if self.settled is None else ["settled" if self.settled else "never settles"]
        out += [f"alarm by {device}" for device in self.alarms]
        out += ["no other alarm"] if self.no_alarms else []
        out += [f"{device} rejects ({reason})" for device, reason in self.rejections]
        out += [event_label(*event) for event in self.events]
        out += [f"no {name}" + (f" on {device}" if device else "") for device, name in self.absent]
        return tuple(out)


def event_label(device: str | None, name: str, phase: str, after: str | None) -> str:
    return (
        name
        + (f" on {device}" if device else "")
        + (" during setup" if phase == "setup" else "")
        + (f" after {after}" if after else "")
    )


@attrs.frozen
class Scenario:
    name: str
    description: str
    path: Path
    spec: S.WorldSpec
    expect: Expect
    variant: Variant = HONEST
    variant_ref: str | None = None  # "module:name" as the file gives it
    base: Variant = HONEST  # a release's old version (``spec.rollout``; ``variant``: the new)
    promises: tuple[Promise, ...] = ()  # what the description promises, and what checks it

    def with_seed(self, seed: int) -> "Scenario":
        return attrs.evolve(self, spec=attrs.evolve(self.spec, seed=seed))

    @property
    def honest(self) -> bool:
        """No adversary and no theft: every invariant applies."""
        return honest(self.spec)


def honest(spec: S.WorldSpec) -> bool:
    return not any(isinstance(a, S.Adversary | S.Steal) for a in spec.schedule)


# -- the sections -------------------------------------------------------------------------

_PROBABILITIES = (
    "request_loss",
    "response_loss",
    "poke_loss",
    "duplicate_rate",
    "reorder_rate",
    "error_5xx_rate",
    "error_429_rate",
)
_MINUTE_MS = 60_000


def _network(r: Reader) -> NetworkProfile:
    r.only(*_PROBABILITIES, "timeout_ms", "latency_ms", "jitter_ms", "relay_delay_ms")
    delay = {"low": 0, "high": _MINUTE_MS, "unit": "ms"}
    latency = Latency(
        r.number("latency_ms", 20.0, **delay), r.number("jitter_ms", 10.0, **delay), "exponential"
    )
    values = {k: r.number(k, low=0, high=1) for k in _PROBABILITIES if k in r.table}
    timeout = r.number("timeout_ms", 10_000.0, above=0, high=10 * _MINUTE_MS, unit="ms")
    return NetworkProfile(
        up=latency,
        down=latency,
        relay_delay=Latency(r.number("relay_delay_ms", 0.0, **delay)),
        timeout_ms=timeout,
        **values,
    )


BLOB_POLICIES = ("retain", "transport", "ephemeral")


def _workload(r: Reader, duration: float, devices: dict[str, str]) -> S.Workload:
    r.only(
        "interval", "edit", "delete", "keys", "kinds", "payload_bytes", "writers", "stop_at",
        "blobs", "blob_policies",
    )  # fmt: skip
    edit, delete = r.number("edit", 0.4, low=0, high=1), r.number("delete", 0.05, low=0, high=1)
    if edit + delete > 1:
        raise r.error("delete", f"edit + delete must be at most 1, got {edit:g} + {delete:g}")
    writers = r.strings("writers") if "writers" in r.table else None
    for writer in writers or ():
        if writer not in devices:
            raise r.fail("writers", f"devices of the world ({', '.join(sorted(devices))})")
    kinds = r.strings("kinds", ("note",))
    if not kinds or not all(is_safe_id(k) for k in kinds):
        raise r.fail("kinds", "a non-empty list of record kinds (safe IDs)")
    policies = r.strings("blob_policies", BLOB_POLICIES)
    if not policies or not set(policies) <= set(BLOB_POLICIES):
        raise r.fail("blob_policies", f"a non-empty list among {', '.join(BLOB_POLICIES)}")
    return S.Workload(
        interval_s=r.number("interval", 10.0, low=0.1, high=DAY_S, unit="seconds"),
        edit=edit,
        delete=delete,
        keys_per_graph=r.number("keys", 50, whole=True, low=1, high=100_000),
        kinds=kinds,
        payload_bytes=r.number("payload_bytes", 48, whole=True, low=0, high=1_000_000),
        writers=writers,
        stop_at=r.number("stop_at", low=0, high=duration, unit="seconds, within the run"),
        blobs=r.number("blobs", 0.0, low=0, high=1),
        blob_policies=policies,
    )


def _relay(r: Reader) -> dict:
    """Relay settings, checked now (a relay may be stricter than the spec, never looser).
    Rate limits are ``{bucket = {burst = N, refill_ms = M}}``; ``{}`` turns them off."""
    r.only(*(f.name for f in attrs.fields(RelaySettings)))
    settings = dict(r.table)
    if "rate_limits" in settings:
        limits = r.sub("rate_limits")
        settings["rate_limits"] = {}
        for bucket in limits.table:
            row = limits.sub(bucket)
            row.only("burst", "refill_ms")
            settings["rate_limits"][bucket] = RateLimit(
                row.number("burst", required=True, whole=True, low=1),
                row.number("refill_ms", required=True, whole=True, low=1),
            )
    try:
        RelaySettings(**settings)
    except SimkitError as exc:
        raise r.error("", str(exc)) from None
    return settings


def _event_names() -> tuple[str, ...]:
    """Every name a trace event can carry: client and relay events, scheduled actions
    (the world notes each by its class name) and the world's own."""
    relay = {
        cls.kind
        for cls in vars(relay_events).values()
        if isinstance(cls, type) and isinstance(getattr(cls, "kind", None), str)
    }
    actions = {cls.__name__ for cls in ACTIONS.values()}
    return tuple(sorted({*EVENT_KINDS, *relay, *actions, *WORLD_EVENTS}))


ACTORS = ("relay", "schedule", "world", "network", "adversary")


def _expect(r: Reader, devices: dict[str, str], spec: S.WorldSpec) -> Expect:
    r.only("invariants", "settled", "alarms", "no_alarms", "rejections", "events", "absent")
    applicable = Monitor(honest(spec)).names
    invariants = r.strings("invariants") if "invariants" in r.table else None
    for name in invariants or ():
        if name not in NAMES:
            raise r.fail("invariants", f"invariant names among {', '.join(NAMES)}")
        if name not in applicable:
            why = "a malicious relay (adversary or steal)"
            raise r.error(
                "invariants",
                f"{name!r} cannot be checked in a run with {why}; "
                f"those that apply: {', '.join(applicable)}",
            )
    alarms = r.strings("alarms")
    for device in alarms:
        if device not in devices:
            raise r.fail("alarms", f"devices of the world ({', '.join(sorted(devices))})")
    rejections = []
    for row in r.rows("rejections"):
        row.only("device", "reason")
        rejections.append(
            (_actor(row, devices, required=True), row.get("reason", str, required=True))
        )
    events = []
    for row in r.rows("events"):
        row.only("device", "name", "during", "after")
        after = row.get("after", str)
        if after is not None and after not in _event_names():
            raise row.fail("after", "an event name (docs/scenarios.md lists them)")
        phase = row.choice("during", PHASES, "run")
        events.append((_actor(row, devices), _event(row), phase, after))
    absent = []
    for row in r.rows("absent"):
        row.only("device", "name")
        absent.append((_actor(row, devices), _event(row)))
    return Expect(
        invariants=invariants,
        settled=r.get("settled", bool),
        alarms=alarms,
        no_alarms=r.get("no_alarms", bool, False),
        rejections=tuple(rejections),
        events=tuple(events),
        absent=tuple(absent),
    )


def _actor(row: Reader, devices: dict[str, str], required: bool = False) -> str | None:
    actor = row.get("device", str, required=required)
    if actor is not None and actor not in devices and actor not in ACTORS:
        raise row.fail("device", f"a device of the world ({', '.join(sorted(devices))}) or one "
                                 f"of {', '.join(ACTORS)}")  # fmt: skip
    return actor


def _event(row: Reader) -> str:
    name = row.get("name", str, required=True)
    if name not in _event_names():
        raise row.fail("name", "an event name (docs/scenarios.md lists them)")
    return name


def _release(r: Reader, cast, schedule: tuple) -> tuple[S.Rollout | None, Variant]:
    """``[release]``: the world runs two versions, ``base`` (default: the protocol as
    specified) and ``variant``; ``relay`` and ``new_devices`` say who starts on the new
    one; ``upgrade`` actions move the rest (docs/releases.md)."""
    rel = r.sub("release")
    if "release" not in r.table:
        upgrade = next((a for a in schedule if isinstance(a, S.Upgrade)), None)
        if upgrade is not None:
            raise r.fail("release", "a [release] table: an upgrade action moves a party to "
                                    "the release's new version (docs/releases.md)")  # fmt: skip
        return None, HONEST
    rel.only("base", "relay", "new_devices")
    base, _ = _variant(rel, "base")
    new = rel.strings("new_devices") if "new_devices" in rel.table else ()
    for device in new:
        if device not in cast.members:
            raise rel.fail("new_devices", f"devices of the world ({', '.join(cast.members)})")
    if len(set(new)) != len(new):
        raise rel.fail("new_devices", "each device once")
    relay = rel.choice("relay", ("base", "new"), "base")
    moved = {*new, *(["relay"] if relay == "new" else [])}
    rows = r.rows("schedule")
    order = sorted(range(len(schedule)), key=lambda i: (schedule[i].at, i))
    for i in order:  # an upgrade of a party already on the new version changes nothing
        action = schedule[i]
        if isinstance(action, S.Upgrade):
            if action.target in moved:
                raise rows[i].fail(
                    "target", f"a party still on the base version ({action.target!r} is on the "
                    "new one by then: [release] or an earlier upgrade)",
                )  # fmt: skip
            moved.add(action.target)
    return S.Rollout(relay_new=relay == "new", devices_new=tuple(new)), base


def _variant(r: Reader, key: str = "variant") -> tuple[Variant, str | None]:
    """``variant = "module:name"`` (or ``"path/to/change.py:name"``, relative to the file)."""
    ref = r.get(key, str)
    if ref is None:
        return HONEST, None
    try:
        resolved = ref_resolved_from(ref, r.source.path.parent)
        return load_variant(resolved, where=f"{ref}"), ref
    except SimkitError as exc:
        raise r.error(key, str(exc)) from None


# -- the file -----------------------------------------------------------------------------

TOP_KEYS = (
    "name", "description", "seed", "duration", "drain", "approval", "send_metadata", "variant",
    "members", "groups", "capabilities", "graphs", "subscriptions", "clocks", "network",
    "workload", "schedule", "relay", "expect", "release", "promise",
)  # fmt: skip


def load_scenario(path: str | Path) -> Scenario:
    """Read and check one scenario file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{path}: not UTF-8 text") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = re.search(r"at line (\d+)", str(exc))
        where = f"{path}:{line.group(1)}" if line else str(path)
        raise ScenarioError(f"{where}: not valid TOML: {exc}") from None
    r = Reader(Source(path, text), data)
    r.only(*TOP_KEYS)
    if not data:
        raise r.error("", "empty; a scenario needs at least [members] and graphs")
    duration = r.number("duration", 300.0, above=0, high=DAY_S, unit="seconds")
    cast = _cast(r)
    devices = {
        m: tuple(d for d, owner in cast.members.items() if owner == m) for m in r.table["members"]
    }
    groups = {g: tuple(sorted(m)) for g, m in cast.groups.items()}
    schedule = read_schedule(r.rows("schedule"), cast, duration)  # adds the devices it creates
    rollout, base = _release(r, cast, schedule)
    try:
        spec = S.WorldSpec(
            seed=r.number("seed", 0, whole=True, low=0, high=2**63 - 1),
            devices=devices,
            groups=groups,
            capabilities=_capabilities(r, cast),
            graphs=cast.graphs,
            subscriptions=_subscriptions(r, cast),
            clocks=_clocks(r.sub("clocks")),
            network=_network(r.sub("network")),
            workload=_workload(r.sub("workload"), duration, cast.members),
            schedule=schedule,
            duration_s=duration,
            drain_s=r.number("drain", 600.0, low=0, high=DAY_S, unit="seconds"),
            approval_mode=r.choice("approval", ("observe", "approve"), "observe"),
            send_metadata=r.get("send_metadata", bool, False),
            relay_settings=_relay(r.sub("relay")),
            rollout=rollout,
        )
    except S.SpecError as exc:  # a rule the checks above missed: still one line
        raise ScenarioError(f"{path}: {exc}") from None
    variant, ref = _variant(r)
    expect = _expect(r.sub("expect"), cast.members, spec)
    checked = expect.invariants or Monitor(honest(spec)).names
    return Scenario(
        name=r.get("name", str, path.stem),
        description=r.get("description", str, ""),
        path=path,
        spec=spec,
        expect=expect,
        variant=variant,
        variant_ref=ref,
        base=base,
        promises=read_promises(r.rows("promise"), tuple(checked), expect.labels()),
    )


def _cast(r: Reader) -> Cast:
    """Members and their devices, groups and graphs: everything names refer to."""
    members = r.sub("members")
    if not members.table:
        raise r.fail("members", "a table of member = [device IDs], at least one")
    owner: dict[str, str] = {}
    for member in members.table:
        if not is_safe_id(member):
            raise members.error(member, "a member ID must be a safe ID ([A-Za-z0-9_-], 1-64)")
        for device in members.strings(member):
            if not is_safe_id(device) or device in owner:
                raise members.fail(member, "a list of safe, unique device IDs")
            owner[device] = member
    groups = r.sub("groups")
    table = {}
    for group in groups.table:
        listed = groups.strings(group)
        unknown = [m for m in listed if m not in members.table]
        if not is_safe_id(group) or unknown:
            raise groups.error(
                group,
                f"unknown member {unknown[0]!r}; members are {', '.join(members.table)}"
                if unknown
                else "a group ID must be a safe ID",
            )
        table[group] = set(listed)
    graphs = r.strings("graphs")
    if not graphs:
        raise r.fail("graphs", "a non-empty list of graphs (u:<member>, g:<group>, d:<a>:<b>)")
    for graph in graphs:
        if not _known_graph(graph, set(members.table), table):
            raise r.fail(
                "graphs", "graphs u:<member>, g:<group> or d:<a>:<b> (a < b) of known names"
            )
    if len(set(graphs)) != len(graphs):
        raise r.fail("graphs", "each graph once")
    return Cast(owner, table, graphs)


def _known_graph(graph: str, members: set[str], groups: dict) -> bool:
    kind, _, rest = graph.partition(":")
    parts = rest.split(":")
    if kind == "u":
        return len(parts) == 1 and parts[0] in members
    if kind == "g":
        return len(parts) == 1 and parts[0] in groups
    return kind == "d" and len(parts) == 2 and set(parts) <= members and parts == sorted(parts)


def _capabilities(r: Reader, cast: Cast) -> dict:
    capabilities = {}
    for row in r.rows("capabilities"):
        row.only("member", "group", "allow")
        member, group = row.get("member", str, required=True), row.get("group", str, required=True)
        if member not in set(cast.members.values()):
            raise row.fail("member", "a member with devices")
        if group not in cast.groups:
            raise row.fail("group", f"one of the groups ({', '.join(sorted(cast.groups))})")
        allowed = row.strings("allow")
        check_capability(row, "allow", allowed)
        capabilities[member, group] = allowed
    return capabilities


def _subscriptions(r: Reader, cast: Cast) -> tuple[S.Subscription, ...]:
    out = []
    for row in r.rows("subscriptions"):
        row.only("device", "graph", "kinds", "shards", "only")
        device, graph = row.get("device", str, required=True), row.get("graph", str, required=True)
        if device not in cast.members:
            raise row.fail("device", f"a device of the world ({', '.join(sorted(cast.members))})")
        if graph not in cast.graphs:
            raise row.fail("graph", f"one of the scenario's graphs ({', '.join(cast.graphs)})")
        out.append(
            S.Subscription(
                device,
                graph,
                row.strings("kinds"),
                row.strings("shards"),
                row.get("only", bool, False),
            )
        )
    return tuple(out)


def _clocks(r: Reader) -> S.ClockSpec:
    r.only("max_offset_ms", "max_drift_ppm")
    return S.ClockSpec(
        r.number("max_offset_ms", 0, whole=True, low=0, high=365 * DAY_S * 1000, unit="ms"),
        r.number("max_drift_ppm", 0, whole=True, low=0, high=100_000, unit="ppm"),
    )


# -- the library --------------------------------------------------------------------------


def library_path() -> Path:
    """``scenarios/`` in the current directory if there is one, else the library
    shipped with simkit (the repository's ``scenarios/``, as package data)."""
    here = Path("scenarios")
    if here.is_dir():
        return here
    return Path(str(resources.files("simkit") / "library"))


def load_library(path: str | Path | None = None) -> list[Scenario]:
    """One scenario file, or every ``*.toml`` in a folder (sorted by file name);
    ``None``: the library (``library_path``)."""
    path = library_path() if path is None else Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.toml"))
        if not files:
            raise ScenarioError(f"{path}: no *.toml scenario files")
        return [load_scenario(f) for f in files]
    return [load_scenario(path)]


__all__ = ["Expect", "Scenario", "ScenarioError", "honest", "library_path", "load_library",
           "load_scenario"]  # fmt: skip
