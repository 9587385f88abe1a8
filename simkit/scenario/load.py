"""Scenario files: TOML that maps onto a ``WorldSpec`` and the expected outcome.

Every key is checked: an unknown key, a wrong type or a bad value is a
``ScenarioError`` naming the file, the key and what was expected. The format is
documented in docs/scenarios.md.
"""

import tomllib
from pathlib import Path

import attrs

from simkit.errors import InputError
from simkit.relay import RateLimit, RelaySettings
from simkit.sim import spec as S
from simkit.sim.adversary import MODES
from simkit.sim.network import Latency, NetworkProfile


class ScenarioError(InputError):
    """A scenario file breaks the format (the message names file, key and expectation)."""


@attrs.frozen
class Expect:
    """The expected outcome: invariants that must hold, alarms and events that must
    (or must not) happen, by whom."""

    invariants: tuple[str, ...] | None = None  # None: every invariant that applies
    settled: bool | None = None
    alarms: tuple[str, ...] = ()  # devices that must raise the log alarm
    no_alarms: bool = False  # no device may alarm except those in ``alarms``
    rejections: tuple[tuple[str, str], ...] = ()  # (device, reason) that must occur
    events: tuple[tuple[str | None, str], ...] = ()  # (device or None, event name) that must occur
    absent: tuple[tuple[str | None, str], ...] = ()  # ... that must not occur


@attrs.frozen
class Scenario:
    name: str
    description: str
    path: Path
    spec: S.WorldSpec
    expect: Expect

    def with_seed(self, seed: int) -> "Scenario":
        return attrs.evolve(self, spec=attrs.evolve(self.spec, seed=seed))


# -- checking values ---------------------------------------------------------------------


class _Reader:
    """Reads one table of a scenario, naming the file and key in every error."""

    def __init__(self, path: Path, table: dict, where: str) -> None:
        self.path, self.table, self.where = path, table, where

    def fail(self, key: str, expected: str) -> ScenarioError:
        place = f"{self.where}.{key}" if self.where else key
        got = self.table.get(key, "nothing")
        return ScenarioError(f"{self.path}: {place}: expected {expected}, got {got!r}")

    def only(self, *allowed: str) -> None:
        for key in self.table:
            if key not in allowed:
                place = f"{self.where}.{key}" if self.where else key
                raise ScenarioError(
                    f"{self.path}: unknown key {place!r}; expected one of {', '.join(allowed)}"
                )

    def get(self, key: str, kind, default=None, *, required=False):
        if key not in self.table:
            if required:
                raise self.fail(key, f"a {_KIND_NAMES.get(kind, 'value')} (required)")
            return default
        value = self.table[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.fail(key, f"a {_KIND_NAMES.get(kind, kind.__name__)}")
        return value

    def strings(self, key: str, default=()) -> tuple[str, ...]:
        value = self.table.get(key, list(default))
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, "a list of strings")
        return tuple(value)

    def sub(self, key: str) -> "_Reader":
        value = self.get(key, dict, {})
        return _Reader(self.path, value, f"{self.where}.{key}" if self.where else key)

    def rows(self, key: str) -> list["_Reader"]:
        value = self.table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.fail(key, "an array of tables ([[...]])")
        place = f"{self.where}.{key}" if self.where else key
        return [_Reader(self.path, row, f"{place}[{i}]") for i, row in enumerate(value)]


_KIND_NAMES = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    dict: "table",
    list: "list",
}


# -- the sections -------------------------------------------------------------------------

_NETWORK_NUMBERS = (
    "request_loss",
    "response_loss",
    "poke_loss",
    "duplicate_rate",
    "reorder_rate",
    "error_5xx_rate",
    "error_429_rate",
    "timeout_ms",
)


def _network(r: _Reader) -> NetworkProfile:
    r.only(*_NETWORK_NUMBERS, "latency_ms", "jitter_ms", "relay_delay_ms")
    latency = Latency(
        r.get("latency_ms", float, 20.0), r.get("jitter_ms", float, 10.0), "exponential"
    )
    values = {k: r.get(k, float) for k in _NETWORK_NUMBERS if k in r.table}
    try:
        return NetworkProfile(
            up=latency,
            down=latency,
            relay_delay=Latency(r.get("relay_delay_ms", float, 0.0)),
            **values,
        )
    except ValueError as exc:
        raise ScenarioError(f"{r.path}: [network]: {exc}") from None


def _workload(r: _Reader) -> S.Workload:
    r.only(
        "interval",
        "edit",
        "delete",
        "keys",
        "kinds",
        "payload_bytes",
        "writers",
        "stop_at",
        "blobs",
        "blob_policies",
    )
    writers = r.strings("writers") if "writers" in r.table else None
    return S.Workload(
        interval_s=r.get("interval", float, 10.0),
        edit=r.get("edit", float, 0.4),
        delete=r.get("delete", float, 0.05),
        keys_per_graph=r.get("keys", int, 50),
        kinds=r.strings("kinds", ("note",)),
        payload_bytes=r.get("payload_bytes", int, 48),
        writers=writers,
        stop_at=r.get("stop_at", float),
        blobs=r.get("blobs", float, 0.0),
        blob_policies=r.strings("blob_policies", ("retain", "transport", "ephemeral")),
    )


ACTIONS = {
    "partition": S.Partition,
    "crash-device": S.CrashDevice,
    "crash-relay": S.CrashRelay,
    "error-burst": S.ErrorBurst,
    "clock-step": S.ClockStep,
    "link": S.LinkDevice,
    "approve": S.Approve,
    "reject": S.Reject,
    "revoke": S.Revoke,
    "steal": S.Steal,
    "rotate": S.Rotate,
    "recover": S.Recover,
    "invite": S.Invite,
    "join": S.Join,
    "leave": S.Leave,
    "adversary": S.Adversary,
}
KEY_KINDS = {"until": float, "restart_after": float, "status": int, "step_ms": int, "params": dict}
LISTS = ("devices", "targets")
REQUIRED_PARAMS = {"substitute-keys": ("victim",)}


def _action(r: _Reader):
    """One ``[[schedule]]`` entry: ``action`` names it; its keys are the action's fields
    (required unless the action gives a default)."""
    name = r.get("action", str, required=True)
    if name not in ACTIONS:
        raise r.fail("action", f"one of {', '.join(ACTIONS)}")
    cls = ACTIONS[name]
    fields = [f for f in attrs.fields(cls) if f.name != "at"]
    r.only("action", "at", *(f.name for f in fields))
    values = {"at": r.get("at", float, required=True)}
    for field in fields:
        required = field.default is attrs.NOTHING
        if field.name in LISTS:
            values[field.name] = r.strings(field.name)
        elif field.name in r.table or required:
            values[field.name] = r.get(
                field.name, KEY_KINDS.get(field.name, str), required=required
            )
    if name == "adversary":
        _check_mode(r, values["mode"], values.get("params", {}))
    try:
        return cls(**values)
    except (ValueError, TypeError) as exc:
        raise ScenarioError(f"{r.path}: {r.where}: {exc}") from None


def _check_mode(r: _Reader, mode: str, params: dict) -> None:
    if mode not in MODES:
        raise r.fail("mode", f"one of {', '.join(MODES)}")
    for name in REQUIRED_PARAMS.get(mode, ()):
        if name not in params:
            raise r.fail("params", f"a table with {name!r} for mode {mode!r}")


def _relay(r: _Reader) -> dict:
    """Relay settings, checked now (a relay may be stricter than the spec, never looser).
    Rate limits are ``{bucket = {burst = N, refill_ms = M}}``; ``{}`` turns them off."""
    settings = dict(r.table)
    if "rate_limits" in settings:
        limits = r.sub("rate_limits")
        settings["rate_limits"] = {}
        for bucket in limits.table:
            row = limits.sub(bucket)
            row.only("burst", "refill_ms")
            settings["rate_limits"][bucket] = RateLimit(
                row.get("burst", int, required=True), row.get("refill_ms", int, required=True)
            )
    try:
        RelaySettings(**settings)
    except (TypeError, ValueError) as exc:
        raise ScenarioError(f"{r.path}: [relay]: {exc}") from None
    return settings


def _expect(r: _Reader) -> Expect:
    from simkit.invariants import NAMES

    r.only("invariants", "settled", "alarms", "no_alarms", "rejections", "events", "absent")
    invariants = r.strings("invariants") if "invariants" in r.table else None
    for name in invariants or ():
        if name not in NAMES:
            raise ScenarioError(
                f"{r.path}: expect.invariants: unknown invariant {name!r}; expected one of "
                f"{', '.join(NAMES)}"
            )
    rejections = []
    for row in r.rows("rejections"):
        row.only("device", "reason")
        rejections.append(
            (row.get("device", str, required=True), row.get("reason", str, required=True))
        )
    return Expect(
        invariants=invariants,
        settled=r.get("settled", bool),
        alarms=r.strings("alarms"),
        no_alarms=r.get("no_alarms", bool, False),
        rejections=tuple(rejections),
        events=_events(r.rows("events")),
        absent=_events(r.rows("absent")),
    )


def _events(rows: list[_Reader]) -> tuple[tuple[str | None, str], ...]:
    out = []
    for row in rows:
        row.only("device", "name")
        out.append((row.get("device", str), row.get("name", str, required=True)))
    return tuple(out)


def load_scenario(path: str | Path) -> Scenario:
    """Read and check one scenario file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: not valid TOML: {exc}") from None
    r = _Reader(path, data, "")
    r.only(
        "name",
        "description",
        "seed",
        "duration",
        "drain",
        "approval",
        "send_metadata",
        "members",
        "groups",
        "capabilities",
        "graphs",
        "subscriptions",
        "clocks",
        "network",
        "workload",
        "schedule",
        "relay",
        "expect",
    )
    members = r.sub("members")
    devices = {m: members.strings(m) for m in members.table}
    groups = r.sub("groups")
    capabilities = {}
    for row in r.rows("capabilities"):
        row.only("member", "group", "allow")
        key = (row.get("member", str, required=True), row.get("group", str, required=True))
        capabilities[key] = row.strings("allow")
    subscriptions = []
    for row in r.rows("subscriptions"):
        row.only("device", "graph", "kinds", "shards", "only")
        subscriptions.append(
            S.Subscription(
                row.get("device", str, required=True),
                row.get("graph", str, required=True),
                row.strings("kinds"),
                row.strings("shards"),
                row.get("only", bool, False),
            )
        )
    clocks = r.sub("clocks")
    clocks.only("max_offset_ms", "max_drift_ppm")
    approval = r.get("approval", str, "observe")
    if approval not in ("observe", "approve"):
        raise r.fail("approval", "'observe' or 'approve'")
    relay_settings = _relay(r.sub("relay"))
    try:
        spec = S.WorldSpec(
            seed=r.get("seed", int, 0),
            devices=devices,
            groups={g: groups.strings(g) for g in groups.table},
            capabilities=capabilities,
            graphs=r.strings("graphs"),
            subscriptions=tuple(subscriptions),
            clocks=S.ClockSpec(
                clocks.get("max_offset_ms", int, 0), clocks.get("max_drift_ppm", int, 0)
            ),
            network=_network(r.sub("network")),
            workload=_workload(r.sub("workload")),
            schedule=tuple(_action(row) for row in r.rows("schedule")),
            duration_s=r.get("duration", float, 300.0),
            drain_s=r.get("drain", float, 600.0),
            approval_mode=approval,
            send_metadata=r.get("send_metadata", bool, False),
            relay_settings=relay_settings,
        )
    except S.SpecError as exc:
        raise ScenarioError(f"{path}: {exc}") from None
    return Scenario(
        name=r.get("name", str, path.stem),
        description=r.get("description", str, ""),
        path=path,
        spec=spec,
        expect=_expect(r.sub("expect")),
    )


def load_library(path: str | Path) -> list[Scenario]:
    """One scenario file, or every ``*.toml`` in a folder (sorted by file name)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.toml"))
        if not files:
            raise ScenarioError(f"{path}: no *.toml scenario files")
        return [load_scenario(f) for f in files]
    return [load_scenario(path)]
