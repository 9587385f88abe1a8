"""What a world is made of: frozen values that decide a whole run with its seed.

A ``WorldSpec`` names the members and their devices, groups and capabilities,
the graphs (by storage key), clocks, the network profile, the workload, a
schedule of faults, ceremonies and adversary actions, and the duration. Scenario
files (TOML) map onto these classes one to one.
"""

import attrs

from simkit.errors import SimkitError
from simkit.protocol.ids import is_safe_id
from simkit.protocol.limits import RelaySettings, RelaySettingsError
from simkit.sim.network import NetworkProfile


class SpecError(SimkitError, ValueError):
    """A world specification breaks a rule (the message names it)."""


def _ids(instance, attribute, value) -> None:
    for item in value:
        if not is_safe_id(item):
            raise SpecError(f"{attribute.name}: {item!r} is not a safe ID")


def _at(instance, attribute, value) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise SpecError(f"{type(instance).__name__}.{attribute.name} must be a time >= 0 (s)")


def _relay_settings(value: dict) -> None:
    """The settings build a ``RelaySettings``: every name known, every value in range."""
    try:
        RelaySettings(**value)
    except (TypeError, RelaySettingsError) as exc:
        raise SpecError(f"relay settings: {exc}") from None


def _tuple(value) -> tuple:
    return tuple(value)


# -- scheduled actions -------------------------------------------------------------------


@attrs.frozen
class Partition:
    """Cut ``devices`` off the relay from ``at`` until ``until`` (seconds)."""

    devices: tuple[str, ...] = attrs.field(converter=_tuple, validator=_ids)
    at: float = attrs.field(validator=_at)
    until: float = attrs.field(validator=_at)


@attrs.frozen
class CrashDevice:
    """Kill a device at ``at``; it restarts from its snapshot ``restart_after`` s later."""

    device: str
    at: float = attrs.field(validator=_at)
    restart_after: float = 5.0


@attrs.frozen
class CrashRelay:
    """The relay is down from ``at`` to ``until`` and restarts from its stored state."""

    at: float = attrs.field(validator=_at)
    until: float = attrs.field(validator=_at)


@attrs.frozen
class ErrorBurst:
    """The relay answers ``status`` (a 5xx or 429) from ``at`` to ``until``: to
    everything, or (a partial outage) only to requests of ``route``, such as
    "GET /graphs/:gid/devices"."""

    status: int
    at: float = attrs.field(validator=_at)
    until: float = attrs.field(validator=_at)
    route: str | None = None


@attrs.frozen
class ClockStep:
    """A device's wall clock steps by ``step_ms`` at ``at`` (an NTP step, a device hours ahead)."""

    device: str
    at: float = attrs.field(validator=_at)
    step_ms: int = 0


@attrs.frozen
class LinkDevice:
    """A new device of ``member`` registers at ``at`` and follows the member's graphs;
    ``self_sig`` False: it runs an older client, which registers without selfSig."""

    member: str
    device: str
    at: float = attrs.field(validator=_at)
    self_sig: bool = True


@attrs.frozen
class Upgrade:
    """At ``at``, ``target`` (a device ID, or ``relay``) restarts into the release's new
    version from its own persisted state (a world with a ``Rollout``)."""

    target: str
    at: float = attrs.field(validator=_at)


@attrs.frozen
class Rollout:
    """A world that runs a release: two versions at once. Every party starts on the
    base version but the relay when ``relay_new`` and the devices in ``devices_new``
    (a fleet kept mixed, ``--mix``); ``Upgrade`` actions move the rest."""

    relay_new: bool = False
    devices_new: tuple[str, ...] = attrs.field(default=(), converter=_tuple, validator=_ids)


@attrs.frozen
class _OnDevice:
    """A decision a device ``by`` makes about another ``device`` at ``at``."""

    by: str
    device: str
    at: float = attrs.field(validator=_at)


@attrs.frozen
class Approve(_OnDevice):
    """A human on ``by`` approves ``device`` after comparing pairing codes."""


@attrs.frozen
class Reject(_OnDevice):
    """A human on ``by`` refuses ``device``: it is never wrapped to in approve mode."""


@attrs.frozen
class Revoke(_OnDevice):
    """``by`` revokes ``device`` (same member) and rotates the graphs it held keys for."""


@attrs.frozen
class Steal(_OnDevice):
    """``by`` revokes ``device``, but a thief keeps it running and writing, and the relay
    colludes (``accept-revoked``): other devices must refuse what it writes."""


@attrs.frozen
class Rotate:
    """``by`` mints the next epoch of ``graph`` (a storage key)."""

    by: str
    graph: str
    at: float = attrs.field(validator=_at)


@attrs.frozen
class Recover:
    """A new device of ``member`` restores the keyrings in ``source``'s recovery bundle
    (``malformed``: the bundle broken one way of ``simkit.protocol.messages.SEALED_BOX``)."""

    member: str
    device: str
    source: str
    at: float = attrs.field(validator=_at)
    malformed: str | None = None


@attrs.frozen
class Invite:
    """``by`` invites ``member`` to ``graph`` (a group's storage key): the host adds the
    member to the group, and the member's new ``device`` registers and opens the invite
    (``malformed``: the invite string broken one way of ``INVITE_MALFORMATIONS`` or the
    box one way of ``SEALED_BOX``, both in ``simkit.protocol.messages``)."""

    by: str
    graph: str
    member: str
    device: str
    at: float = attrs.field(validator=_at)
    malformed: str | None = None


@attrs.frozen
class Join:
    """``member`` joins ``group`` at ``at`` (the directory changes); its devices follow it."""

    group: str
    member: str
    at: float = attrs.field(validator=_at)


@attrs.frozen
class Leave(Join):
    """``member`` leaves ``group`` at ``at``; the roster keeps its devices."""


@attrs.frozen
class Adversary:
    """Switch a malicious relay mode on for ``targets`` (all devices when empty) at ``at``.

    ``mode`` is one of ``simkit.sim.adversary.MODES``; ``params`` are the mode's own.
    """

    mode: str
    at: float = attrs.field(validator=_at)
    targets: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    params: dict = attrs.Factory(dict)


# -- the world ---------------------------------------------------------------------------


@attrs.frozen
class ClockSpec:
    """Per-device wall clocks: offset and drift drawn from the seed within these bounds."""

    max_offset_ms: int = 0
    max_drift_ppm: int = 0


@attrs.frozen
class Workload:
    """What the members do: each writer writes every ``interval_s`` on average
    (exponential gaps), picking one of its graphs; a write edits an existing record
    with probability ``edit``, deletes one with ``delete``, else creates one."""

    interval_s: float = 10.0
    edit: float = 0.4
    delete: float = 0.05
    keys_per_graph: int = 50
    kinds: tuple[str, ...] = attrs.field(default=("note",), converter=_tuple)
    payload_bytes: int = 48
    writers: tuple[str, ...] | None = attrs.field(default=None)
    stop_at: float | None = None
    blobs: float = 0.0  # probability a write also uploads a blob
    blob_policies: tuple[str, ...] = attrs.field(
        default=("retain", "transport", "ephemeral"), converter=_tuple
    )


@attrs.frozen
class Subscription:
    """An extra, filtered subscription (every device follows its graphs unfiltered
    unless ``only`` is set, then this is its only view of the graph)."""

    device: str
    graph: str
    kinds: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    shards: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    only: bool = False


@attrs.frozen
class WorldSpec:
    seed: int = 0
    devices: dict[str, tuple[str, ...]] = attrs.Factory(dict)  # member -> device IDs
    # members the directory knows who run no simulated device (a rogue client's, in fuzz)
    outsiders: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    groups: dict[str, tuple[str, ...]] = attrs.Factory(dict)  # group -> members
    capabilities: dict[tuple[str, str], tuple[str, ...]] = attrs.Factory(dict)
    graphs: tuple[str, ...] = attrs.field(default=(), converter=_tuple)  # storage keys
    subscriptions: tuple[Subscription, ...] = attrs.field(default=(), converter=_tuple)
    clocks: ClockSpec = attrs.Factory(ClockSpec)
    network: NetworkProfile = attrs.Factory(NetworkProfile)
    workload: Workload = attrs.Factory(Workload)
    schedule: tuple = attrs.field(default=(), converter=_tuple)
    duration_s: float = 300.0
    drain_s: float = 600.0
    approval_mode: str = "observe"
    send_metadata: bool = False
    shards: bool = False  # records carry a shard label (``workload.shard_of``) when sent
    # the relay's settings as ``Relay(..., **relay_settings)`` takes them (RelaySettings)
    relay_settings: dict = attrs.field(factory=dict, validator=lambda i, a, v: _relay_settings(v))
    client_settings: dict = attrs.Factory(dict)  # AppConfig fields (page sizes, batches, ...)
    rollout: Rollout | None = None  # two versions at once (``World(..., base=...)``)

    def __attrs_post_init__(self) -> None:
        owners = {}
        for member, device_ids in self.devices.items():
            if not is_safe_id(member):
                raise SpecError(f"member {member!r} is not a safe ID")
            for device_id in device_ids:
                if not is_safe_id(device_id) or device_id in owners:
                    raise SpecError(f"device {device_id!r} is not a safe, unique device ID")
                owners[device_id] = member
        members = set(self.devices) | set(self.outsiders)
        later = {a.device for a in self.schedule if isinstance(a, LinkDevice | Recover | Invite)}
        for writer in self.workload.writers or ():
            if writer not in owners and writer not in later:
                raise SpecError(f"workload writer {writer!r} is no device of the world")
        for group, group_members in self.groups.items():
            if not is_safe_id(group) or not set(group_members) <= members:
                raise SpecError(f"group {group!r} must be a safe ID listing known members")
        for graph in self.graphs:
            kind, _, rest = graph.partition(":")
            parts = rest.split(":")
            known = (
                (kind == "u" and parts[0] in members)
                or (kind == "g" and parts[0] in self.groups)
                or (
                    kind == "d"
                    and len(parts) == 2
                    and set(parts) <= members
                    and parts == sorted(parts)
                )
            )
            if not known:
                raise SpecError(
                    f"graph {graph!r} must be u:<member>, g:<group> or d:<a>:<b> (a < b) "
                    "of known names"
                )
