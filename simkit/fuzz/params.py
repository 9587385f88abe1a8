"""What a fuzz world is, besides its steps: drawn per example, kept in a reproducer.

Every example draws its own settings, so that page sizes of 1, quotas of three
records, tight rate limits, short TTLs and a sweeper that never runs are crossed,
not only the defaults; and a swarm: the rules this example may use (swarm testing,
Groce et al. 2012: leaving rules out makes rare interleavings of the rest common).
"""

import attrs
from hypothesis import strategies as st

from simkit.client.config import AppConfig
from simkit.errors import InputError
from simkit.fuzz.rogue import ROGUE_GROUP, ROGUES
from simkit.protocol.limits import RateLimit, RelaySettings, RelaySettingsError
from simkit.sim import spec as S
from simkit.sim.network import NetworkProfile

MEMBERS = {"alice": ("a1", "a2"), "bob": ("b1", "b2"), "carol": ("c1",)}
GROUP = "team"
GRAPHS = ("g:team", "u:alice", "d:alice:bob")
RECORDS = ("r0", "r1", "r2", "r3")
KINDS = {"r2": "task", "r3": "task"}  # the rest are notes: a task has a schema (APP_SCHEMAS)

# Settings a relay may choose (stricter than the spec, never looser), default first:
# Hypothesis shrinks toward the first choice, so a reproducer keeps only what matters.
RELAY_CHOICES = {
    "max_pull_limit": (500, 1, 2, 7),
    "max_ops_per_push": (200, 1, 3),
    "quota_records": (None, 3, 8),
    "quota_bytes": (None, 6_000),
    "rate_limits": (None, "tight", "off"),
    "sweep_interval_ms": (60_000, 1_000, 0),
    "max_rev_skew_ms": (300_000, 60_000),
    "max_blob_ttl_ms": (None, 120_000),
    "quota_blob_bytes": (None, 200),  # two or three of the machines' blobs
    # a byte budget a burst's batches fill (an op is about 400 bytes; a key post, 2,000)
    "max_push_bytes": (8 * 1024 * 1024, 6_000),
    # log pruning: the log route keeps the newest five entries, so a device that misses
    # a few writes (a burst, a partition, a crash, a late link) finds the log pruned past
    # it; one world in eight (an anchored device compares no heads: most keep the log)
    "log_keep": (None, None, None, None, None, None, None, 5),
}
RATE_LIMITS = {
    "tight": {"read": [30, 400], "write": [6, 1_000], "blob": [3, 2_000]},
    "off": {},
}
CLIENT_CHOICES = {
    "pull_limit": (500, 1, 3),
    "log_page": (500, 1, 5),
    "max_batch_ops": (200, 1, 2),
    "recheck_s": (30.0, 5.0),
    "poll_interval_s": (5.0, 2.0),
}
# A fuzz world with nothing changing for this long (three key rechecks, or the longest
# retry backoff) will not change: quiescence ends there (a world still changing gets
# longer, simkit.sim.world.DRAIN_CAP_S).
DRAIN_S = 180
# The host would refuse every capability on the personal and pairwise graphs, were it
# asked: the spec has only ``g:`` graphs asked ("never asked and always allowed"), so a
# relay that asks about ``u:``/``d:`` graphs refuses their owners (the key after ``u:`` or
# ``d:`` is what such a relay would ask about).
REFUSED_IF_ASKED = {
    **{(member, member): () for member in MEMBERS},
    ("alice", "alice:bob"): (),
    ("bob", "alice:bob"): (),
}
# Partial sync (a world's views of its graphs): "views" gives b2 only the group graph's
# tasks (its log status is off there) and a2 a view of its notes beside its whole
# personal graph; "metadata" also sends ``k`` and ``sh`` and gives c1 a view of one shard
# of the group graph beside the whole of it.
PARTIAL = {
    "views": (
        S.Subscription("b2", "g:team", kinds=("task",), only=True),
        S.Subscription("a2", "u:alice", kinds=("note",)),
    ),
    "metadata": (
        S.Subscription("b2", "g:team", kinds=("task",), only=True),
        S.Subscription("a2", "u:alice", kinds=("note",)),
        S.Subscription("c1", "g:team", shards=("s0",)),
    ),
}
# Capabilities of a member in the group graph (None: the directory grants everything).
CAPABILITIES = {"all": None, "read-only": ["rotate"], "no-rotate": ["write"], "none": []}

SWARM = (
    "concurrent", "burst", "refresh", "link", "approve", "revoke", "rotate", "recover",
    "invite", "membership", "capability", "crash", "jump", "partition", "errors",
    "relay-crash", "blobs", "interrupt", "rogue", "adversary", "steal", "relay-acts", "newer",
)  # fmt: skip
"""Rules an example may leave out (``advance`` and ``write`` are always on)."""


def _on(rule: str, weights: dict[str, float] | None) -> st.SearchStrategy:
    """Whether a swarm rule is on: even odds, or (steered) its weight, in percent."""
    if weights is None:
        return st.booleans()
    percent = round(100 * weights[rule])
    return st.integers(0, 99).map(lambda n: n < percent)


def _setting(choices: tuple) -> st.SearchStrategy:
    return st.sampled_from(choices)


class ParamsError(InputError):
    """A fuzz world's parameter is unknown, of the wrong type, or out of its range."""


def _bad(attribute, value, rule: str):
    raise ParamsError(f"world.{attribute.name} must be {rule}, not {value!r}")


def _whole(low: int, high: int):
    def check(instance, attribute, value) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            _bad(attribute, value, f"a whole number from {low:,} up to {high:,}")

    return check


def _loss(instance, attribute, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
        _bad(attribute, value, "a share from 0 up to (not including) 1")


def _mode(instance, attribute, value) -> None:
    if value not in ("observe", "approve"):
        _bad(attribute, value, '"observe" or "approve"')


def _partial(instance, attribute, value) -> None:
    if value is not None and (not isinstance(value, str) or value not in PARTIAL):
        _bad(attribute, value, "null (whole graphs) or one of " + ", ".join(sorted(PARTIAL)))


def _settings(choices: dict, relay: bool = False):
    """Known settings only. A relay's also build its ``RelaySettings`` (each value of
    its type and in its range, as the relay reads them), its rate limits named in
    ``RATE_LIMITS``."""

    def check(instance, attribute, value) -> None:
        if not isinstance(value, dict):
            _bad(attribute, value, "an object of settings")
        for key in value:
            if key not in choices:
                _bad(attribute, key, "a known setting: " + ", ".join(sorted(choices)))
        if not relay:
            return
        limits = value.get("rate_limits")
        if "rate_limits" in value and not (isinstance(limits, str) and limits in RATE_LIMITS):
            _bad(attribute, limits, "rate limits named " + ", ".join(sorted(RATE_LIMITS)))
        try:
            RelaySettings(**{k: v for k, v in value.items() if k != "rate_limits"})
        except RelaySettingsError as exc:
            raise ParamsError(f"world.{attribute.name}.{exc}") from None

    return check


# What a reproducer may set in ``client``: the plain settings of AppConfig (the world
# chooses the registry, the approval mode and whether metadata is sent).
CLIENT_SETTINGS = {
    f.name: f.default
    for f in attrs.fields(AppConfig)
    if f.name not in ("registry", "shard_of", "backoff", "approval_mode", "send_metadata")
}


def _client(instance, attribute, value) -> None:
    """Known client settings, each of its default's type, within AppConfig's limits."""
    _settings(CLIENT_SETTINGS)(instance, attribute, value)
    for key, setting in value.items():
        default = CLIENT_SETTINGS[key]
        if isinstance(default, bool):
            ok, rule = isinstance(setting, bool), "true or false"
        else:  # rotate_after_s may be null: only the revoker rotates
            ok = (setting is None and key == "rotate_after_s") or (
                isinstance(setting, int | float) and not isinstance(setting, bool) and setting > 0
            )
            rule = "a number above 0" + (" or null" if key == "rotate_after_s" else "")
        if not ok:
            raise ParamsError(
                f"world.client.{key} must be {rule} (default {default!r}), not {setting!r}"
            )
    try:
        AppConfig(**value)
    except ValueError as error:
        raise ParamsError(f"world.client: {error}") from None


def _capabilities(instance, attribute, value) -> None:
    if not isinstance(value, dict):
        _bad(attribute, value, "an object: member -> capability")
    for member, choice in value.items():
        if member not in MEMBERS:
            _bad(attribute, member, "a member: " + ", ".join(MEMBERS))
        if choice not in CAPABILITIES:
            _bad(attribute, choice, "a capability: " + ", ".join(CAPABILITIES))


def _rollout(instance, attribute, value) -> None:
    """``{"relay_new": bool, "devices_new": [device IDs]}``: who starts on the new version."""
    if value is None:
        return
    if not isinstance(value, dict) or set(value) != {"relay_new", "devices_new"}:
        _bad(attribute, value, 'null or {"relay_new": true|false, "devices_new": [device IDs]}')
    if not isinstance(value["relay_new"], bool):
        raise ParamsError(
            f"world.rollout.relay_new must be true or false, not {value['relay_new']!r}"
        )
    fleet = [d for ids in MEMBERS.values() for d in ids]
    devices = value["devices_new"]
    if not isinstance(devices, list) or any(d not in fleet for d in devices):
        raise ParamsError(
            f"world.rollout.devices_new must be a list of the fleet's devices "
            f"({', '.join(fleet)}), not {devices!r}"
        )


def _rules(value):
    if value is None:
        return None
    if not isinstance(value, list | tuple) or any(rule not in SWARM for rule in value):
        raise ParamsError(
            f"world.rules must be null or a list of: {', '.join(SWARM)}; not {value!r}"
        )
    return tuple(value)


@attrs.frozen
class WorldParams:
    """A fuzz world's parameters, all JSON in a reproducer. ``relay`` and ``client``
    hold only settings that differ from the defaults; ``capabilities`` maps a
    member to its capability choice in the group graph; ``rules`` is the swarm."""

    seed: int = attrs.field(validator=_whole(0, 2**63 - 1))
    approval_mode: str = attrs.field(default="observe", validator=_mode)
    max_offset_ms: int = attrs.field(default=0, validator=_whole(0, 86_400_000))
    request_loss: float = attrs.field(default=0.0, validator=_loss)
    response_loss: float = attrs.field(default=0.0, validator=_loss)
    relay: dict = attrs.field(factory=dict, validator=_settings(RELAY_CHOICES, relay=True))
    client: dict = attrs.field(factory=dict, validator=_client)
    capabilities: dict = attrs.field(factory=dict, validator=_capabilities)
    rules: tuple[str, ...] | None = attrs.field(default=None, converter=_rules)
    # a release: who starts on the new version (the rest upgrade by ``upgrade`` steps)
    rollout: dict | None = attrs.field(default=None, validator=_rollout)
    # partial sync (``PARTIAL``): None, every device sees whole graphs
    partial: str | None = attrs.field(default=None, validator=_partial)

    @classmethod
    def from_json(cls, world) -> "WorldParams":
        """The world a reproducer's ``world`` or a scope's ``[world]`` holds: every key
        known, ``seed`` present, every value in its range (``ParamsError`` names the key)."""
        if not isinstance(world, dict):
            raise ParamsError(f"a world is an object of parameters, not {world!r}")
        fields = sorted(field.name for field in attrs.fields(cls))
        odd = sorted(set(world) - set(fields))
        if odd or "seed" not in world:
            what = f"unknown key world.{odd[0]}" if odd else "missing key world.seed"
            raise ParamsError(f"{what} (a world has: {', '.join(fields)})")
        return cls(**world)

    def relay_settings(self) -> dict:
        settings = {k: v for k, v in self.relay.items() if k != "rate_limits"}
        if "rate_limits" in self.relay:
            settings["rate_limits"] = {
                bucket: RateLimit(burst, refill)
                for bucket, (burst, refill) in RATE_LIMITS[self.relay["rate_limits"]].items()
            }
        return settings

    def client_settings(self) -> dict:
        """A deployment keeps its clients within its relay's limits: a batch larger than
        the relay's ``maxOpsPerPush`` is refused as invalid, and one over its
        ``maxPushBytes`` is 413, not retryable, for ever (docs/findings.md, docs/client.md)."""
        settings = dict(self.client)
        ceiling = self.relay.get("max_ops_per_push", 200)
        settings["max_batch_ops"] = min(settings.get("max_batch_ops", 200), ceiling)
        if "max_push_bytes" in self.relay:
            settings["max_batch_bytes"] = self.relay["max_push_bytes"]
        return settings

    def spec(self) -> S.WorldSpec:
        return S.WorldSpec(
            seed=self.seed,
            devices=MEMBERS,
            outsiders=tuple(ROGUES),
            groups={GROUP: tuple(MEMBERS), ROGUE_GROUP: tuple(ROGUES)},
            capabilities={
                **REFUSED_IF_ASKED,
                **{
                    (member, GROUP): tuple(CAPABILITIES[choice])
                    for member, choice in sorted(self.capabilities.items())
                    if CAPABILITIES[choice] is not None
                },
            },
            graphs=GRAPHS,
            subscriptions=PARTIAL.get(self.partial, ()),
            send_metadata=self.partial == "metadata",
            shards=self.partial == "metadata",
            clocks=S.ClockSpec(max_offset_ms=self.max_offset_ms),
            network=NetworkProfile(
                request_loss=self.request_loss, response_loss=self.response_loss
            ),
            duration_s=0,
            drain_s=DRAIN_S,
            approval_mode=self.approval_mode,
            relay_settings=self.relay_settings(),
            client_settings=self.client_settings(),
            rollout=None if self.rollout is None else S.Rollout(**self.rollout),
        )

    def enabled(self, rule: str) -> bool:
        return self.rules is None or rule not in SWARM or rule in self.rules

    def to_json(self) -> dict:
        data = attrs.asdict(self)
        data["rules"] = None if self.rules is None else list(self.rules)
        if self.rollout is None:
            del data["rollout"]  # a world of one version, as before releases were fuzzed
        if self.partial is None:
            del data["partial"]  # whole graphs only, as before partial sync was fuzzed
        return data


CLASSIC = {
    True: ("concurrent", "refresh", "link", "approve", "revoke", "rotate", "recover",
           "crash", "jump", "partition", "errors", "relay-crash"),
    False: ("concurrent", "refresh", "link", "approve", "revoke", "rotate", "recover",
            "crash", "jump", "adversary", "steal"),
}  # fmt: skip
"""The rules of commit 685eb33's honest and adversary machines, in today's names."""


@st.composite
def world_params(
    draw,
    honest: bool = True,
    classic: bool = False,
    release: frozenset = frozenset(),
    weights: dict[str, float] | None = None,
) -> WorldParams:
    """Draw a world: seed, approval mode, skew and loss, settings, capabilities and
    the swarm. ``classic``: the draws of commit 685eb33's machines (seed and approval,
    plus skew and loss for the honest one; default settings; their rules), for
    comparing equal work. ``release``: ``rollout`` and/or ``mix`` (docs/releases.md):
    whether the relay starts on the new version, and (``mix``) which devices do.
    ``weights``: each swarm rule's odds of being on (a run steered toward its change,
    simkit.fuzz.steer); otherwise even."""

    def changed(choices: dict) -> dict:
        drawn = {name: draw(_setting(values), label=name) for name, values in choices.items()}
        return {
            name: value
            for name, value in drawn.items()
            if value is not None and value != choices[name][0]
        }

    seed = draw(st.integers(0, 2**32 - 1), label="seed")
    approval = draw(st.sampled_from(["observe", "approve"]), label="approval")
    faults = honest or not classic
    skew = draw(st.sampled_from([0, 60_000, 180_000]), label="skew") if faults else 0
    loss = draw(st.sampled_from([0.0, 0.01, 0.05]), label="loss") if faults else 0.0
    if classic:
        return WorldParams(seed, approval, skew, loss, loss, rules=CLASSIC[honest])
    caps = {
        member: choice
        for member in ("bob", "carol")
        if (choice := draw(st.sampled_from(list(CAPABILITIES)), label=f"{member} may")) != "all"
    }
    swarm = draw(st.fixed_dictionaries({rule: _on(rule, weights) for rule in SWARM}), label="swarm")
    rollout = None
    if release:
        fleet = [d for ids in MEMBERS.values() for d in ids]
        mixed = st.lists(st.sampled_from(fleet), unique=True) if "mix" in release else st.just([])
        rollout = {
            "relay_new": draw(st.booleans(), label="relay starts new"),
            "devices_new": sorted(draw(mixed, label="devices start new")),
        }
    partial = draw(st.sampled_from([None, *PARTIAL]), label="partial sync")
    return WorldParams(
        seed,
        approval,
        skew,
        loss,
        loss,
        partial=partial,
        relay=changed(RELAY_CHOICES),
        client=changed(CLIENT_CHOICES),
        capabilities=caps,
        rules=tuple(rule for rule in SWARM if swarm[rule]),
        rollout=rollout,
    )
