"""The ``[[schedule]]`` entries: each read into its action and checked against the
world as it will be when the action fires. Every device, member, group and graph
an action names must exist then (a device a ceremony acts on must also be up and
not revoked), every time must fall inside the run, every number in its range.

A mistake is a ``ScenarioError`` naming the file, the line and the key, never a
world that crashes, hangs, or silently skips the action while the report shows it.
"""

import attrs

from simkit.protocol.messages import ANSWER_MALFORMATIONS, BOX_MALFORMATIONS
from simkit.relay.routing import ROUTES
from simkit.scenario.reader import Reader, ScenarioError
from simkit.sim import spec as S
from simkit.sim.adversary import MODES
from simkit.sim.behaviours import ROUTE_NAMES

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
    "upgrade": S.Upgrade,
}
CREATES = (S.LinkDevice, S.Recover, S.Invite)
"""Actions whose ``device`` is a new device of ``member``."""
CAPABILITIES = tuple(sorted({r.capability for r in ROUTES if r.capability} | {"rotate"}))
"""What a ``[[capabilities]]`` row can allow: what the relay checks."""

TEN_YEARS_MS = 10 * 365 * 86_400_000
MODE_PARAMS: dict[str, dict[str, object]] = {
    "accept-revoked": {},
    "fork": {"merge_at": "time"},
    "rollback": {"snapshot_at": "time"},
    "withhold": {"fraction": "probability", "log": ("lists", "hides")},
    "replay": {"into": ("slot", "graph")},
    "rewrite-log": {"how": ("rev", "drop")},
    "reorder": {"what": ("log", "pull")},
    "substitute-keys": {"victim": "device"},
    "drop-wraps": {},
    "substitute-wraps": {},
    "lie-epoch": {"by": "count"},
    "malform": {"what": tuple(ANSWER_MALFORMATIONS)},
}
"""Each malicious mode's parameters (docs/adversary.md): a kind, or the allowed words."""
REQUIRED_PARAMS = {"substitute-keys": ("victim",), "malform": ("what",)}


@attrs.define
class Cast:
    """Who and what exists, and from when: what a scheduled action may name.

    Times are ``(at, index)``: actions fire in time order, ties in file order."""

    members: dict[str, str]  # device -> its member (every device the run ever has)
    groups: dict[str, set[str]]  # group -> its members now (joins and invites add)
    graphs: tuple[str, ...]
    born: dict[str, tuple[float, int]] = attrs.Factory(dict)  # created by an action
    revoked: dict[str, str] = attrs.Factory(dict)  # device -> the entry that revoked it
    crashes: list[tuple[str, float, float]] = attrs.Factory(list)  # device, down from, until

    def graph_members(self, graph: str) -> set[str]:
        kind, _, rest = graph.partition(":")
        return set(self.groups.get(rest, ())) if kind == "g" else set(rest.split(":"))


def read_schedule(rows: list[Reader], cast: Cast, duration: float) -> tuple:
    """Every entry read, then checked in the order the actions will fire."""
    actions = [_read(row, cast, duration) for row in rows]
    for i, action in enumerate(actions):
        if isinstance(action, CREATES):
            if action.device in cast.members:
                raise rows[i].error("device", f"{action.device!r} already exists; a new ID")
            cast.members[action.device] = action.member
            cast.born[action.device] = (action.at, i)
    for i in sorted(range(len(actions)), key=lambda i: (actions[i].at, i)):
        _check(rows[i], actions[i], (actions[i].at, i), cast)
    return tuple(actions)


def _read(r: Reader, cast: Cast, duration: float):
    if "action" not in r.table:
        strays = [k for k in r.table if k not in _ALL_KEYS]
        also = f" (found unknown key {', '.join(map(repr, strays))})" if strays else ""
        raise r.error("action", f"missing; expected one of {', '.join(ACTIONS)}{also}")
    name = r.choice("action", tuple(ACTIONS))
    cls = ACTIONS[name]
    fields = [f for f in attrs.fields(cls) if f.name != "at"]
    r.only("action", "at", *(f.name for f in fields))
    at = r.number("at", required=True, low=0, high=duration, unit="seconds, within the run")
    values: dict[str, object] = {"at": at}
    for field in fields:
        required = field.default is attrs.NOTHING
        if field.name in r.table or required:
            values[field.name] = _value(r, field.name, at, required)
    if name == "adversary":
        _params(r, values["mode"], values.get("params", {}), at, cast)
    try:
        return cls(**values)
    except (ValueError, TypeError) as exc:
        raise r.error("", str(exc)) from None


_ALL_KEYS = {"action", "at"} | {f.name for cls in ACTIONS.values() for f in attrs.fields(cls)}


def _value(r: Reader, key: str, at: float, required: bool):
    """One field, read by its name: the same key means the same thing in every action."""
    if key in ("devices", "targets"):
        return r.strings(key)
    if key == "until":
        return r.number(key, required=required, above=at, unit=f"seconds, after at ({at:g})")
    if key == "restart_after":
        return r.number(key, required=required, low=0, high=86_400, unit="seconds")
    if key == "status":
        status = r.number(key, required=required, whole=True, low=429, high=599)
        if status != 429 and status < 500:
            raise r.fail(key, "429 or a 5xx status")
        return status
    if key == "step_ms":
        return r.number(key, required=required, whole=True, low=-TEN_YEARS_MS, high=TEN_YEARS_MS)
    if key == "params":
        return r.get(key, dict, required=required)
    if key == "route":  # a partial outage: one of the fifteen routes
        return r.choice(key, ROUTE_NAMES)
    if key == "malformed":  # a recovery bundle broken one way of the spec's table
        return r.choice(key, tuple(BOX_MALFORMATIONS))
    return r.get(key, str, required=required)


def _params(r: Reader, mode: str, params: dict, at: float, cast: Cast) -> None:
    if mode not in MODES:
        raise r.fail("mode", f"one of {', '.join(MODES)}")
    p = Reader(r.source, params, r.place("params"))
    known = MODE_PARAMS.get(mode, {})
    if known:
        p.only(*known)
    elif params:
        raise p.error(next(iter(params)), f"unknown key; mode {mode!r} takes no parameters")
    for name in REQUIRED_PARAMS.get(mode, ()):
        if name not in params:
            raise r.fail("params", f"a table with {name!r} for mode {mode!r}")
    for name, kind in known.items():
        if name not in params:
            continue
        if kind == "time":
            p.number(name, low=0, high=at if name == "snapshot_at" else None,
                     above=at if name == "merge_at" else None, unit="seconds")  # fmt: skip
        elif kind == "probability":
            p.number(name, low=0, high=1)
        elif kind == "count":
            p.number(name, whole=True, low=1, high=1_000)
        elif kind == "device":
            if p.get(name, str) not in cast.members:
                raise p.fail(name, f"a device of the world ({_listed(cast.members)})")
        else:
            p.choice(name, kind)


def _check(r: Reader, action, when: tuple[float, int], cast: Cast) -> None:
    """The names an action uses exist when it fires; a ceremony's actors are up."""
    at = action.at
    for key in ("devices", "targets"):
        for device in getattr(action, key, ()):
            if device not in cast.members:
                raise r.fail(key, f"devices of the world ({_listed(cast.members)})")
    if isinstance(action, S.Partition) and not action.devices:
        raise r.fail("devices", "at least one device")
    if isinstance(action, CREATES):
        _known_member(r, action.member, cast)
    elif isinstance(action, S.Steal):
        _up(r, "device", action.device, when, cast)  # a thief takes a running device
    elif hasattr(action, "device"):
        _existing(r, "device", action.device, when, cast)
    if hasattr(action, "by"):
        _up(r, "by", action.by, when, cast)
    if isinstance(action, S.Recover):
        _up(r, "source", action.source, when, cast)
        if cast.members[action.source] != action.member:
            raise r.fail("source", f"a device of {action.member!r} (its recovery bundle)")
    if isinstance(action, S.Approve | S.Reject | S.Revoke | S.Steal) and action.by == action.device:
        raise r.fail("device", f"another device than by ({action.by!r})")
    if isinstance(action, S.Revoke | S.Steal):
        member = cast.members[action.by]
        if cast.members[action.device] != member:
            raise r.fail(
                "device", f"a device of {member!r}, by's member (a member revokes its own)"
            )
        cast.revoked[action.device] = r.where
    if isinstance(action, S.Rotate | S.Invite):
        _graph(r, action, cast)
    if isinstance(action, S.Join | S.Leave):
        if action.group not in cast.groups:
            raise r.fail("group", f"one of the groups ({_listed(cast.groups)})")
        _known_member(r, action.member, cast)
        members = cast.groups[action.group]
        leaving = isinstance(action, S.Leave)
        if (action.member in members) != leaving:  # else the action would change nothing
            state = "not in" if leaving else "already in"
            raise r.fail("member", f"a member that can {r.table['action']} {action.group!r} "
                                   f"({action.member!r} is {state} it then)")  # fmt: skip
        (members.discard if leaving else members.add)(action.member)
    if isinstance(action, S.Invite):
        cast.groups[action.graph[2:]].add(action.member)
    if isinstance(action, S.CrashDevice):
        cast.crashes.append((action.device, at, at + action.restart_after))
    if isinstance(action, S.Upgrade) and action.target != "relay":
        if action.target not in cast.members:
            raise r.fail("target", f'"relay" or a device of the world ({_listed(cast.members)})')
        _existing(r, "target", action.target, when, cast)


def _known_member(r: Reader, member: str, cast: Cast) -> None:
    if member not in set(cast.members.values()):
        raise r.fail("member", f"one of the members ({_listed(set(cast.members.values()))})")


def _existing(r: Reader, key: str, device: str, when: tuple[float, int], cast: Cast) -> None:
    """A device the run has by then (an initial one, or one an earlier entry created)."""
    if device not in cast.members:
        raise r.fail(key, f"a device of the world ({_listed(cast.members)})")
    if cast.born.get(device, (-1.0, -1)) > when:
        raise r.fail(key, f"a device that exists at {when[0]:g} s ({device!r} is created later)")
    if device in cast.revoked:
        raise r.fail(key, f"a device not revoked by then ({cast.revoked[device]} revoked it)")


def _up(r: Reader, key: str, device: str, when: tuple[float, int], cast: Cast) -> None:
    """A device that acts must exist, be unrevoked, and not be down after a crash."""
    _existing(r, key, device, when, cast)
    for crashed, start, end in cast.crashes:
        if crashed == device and start <= when[0] < end:
            raise r.fail(key, f"a device that is up at {when[0]:g} s ({device!r} is down "
                              f"from {start:g} s to {end:g} s)")  # fmt: skip


def _graph(r: Reader, action, cast: Cast) -> None:
    """A graph of the scenario that the acting device's member belongs to then."""
    graphs = (
        cast.graphs if isinstance(action, S.Rotate) else [g for g in cast.graphs if g[:2] == "g:"]
    )
    if action.graph not in graphs:
        raise r.fail("graph", f"one of the scenario's graphs ({_listed(graphs)})")
    member = cast.members[action.by]
    if member not in cast.graph_members(action.graph):
        raise r.fail("by", f"a device whose member belongs to {action.graph} ({member!r} does not)")


def _listed(names) -> str:
    return ", ".join(sorted(names)) or "none"


def check_capability(r: Reader, key: str, allowed: tuple[str, ...]) -> None:
    for name in allowed:
        if name not in CAPABILITIES:
            raise r.fail(key, f"capabilities among {', '.join(CAPABILITIES)}")


__all__ = ["ACTIONS", "CAPABILITIES", "Cast", "ScenarioError", "read_schedule"]
