"""What the device model is told and what it answers: the device's identity and its
app's choices, the spec-visible state one commit of the device changed, and a finding.

The model reads nothing of the client: whoever drives it (``simkit.sim.oracles``)
turns the device's durable state into these values.
"""

from collections.abc import Callable, Mapping

import attrs

Subscription = tuple[str, tuple[str, ...], tuple[str, ...]]  # graph ID, kinds, shards
UNFILTERED: tuple[str, ...] = ()


@attrs.frozen
class Identity:
    """The device: its member and ID, its wrapping private key (the model opens the
    wraps the relay serves it, as the device must) and its public signing key."""

    member_id: str
    device_id: str
    wrap_key: object = attrs.field(repr=False)
    sig_jwk: dict = attrs.field(repr=False)


@attrs.frozen
class App:
    """The application's choices the spec leaves to it (Defaults): its schemas, whether
    authorship is verified, whether ``k``/``sh`` are sent, the approval mode, whether
    the log is verified; and the deployment's poll interval, debounce (the longest of
    the push and the poke debounces) and key recheck interval (docs/client.md)."""

    accepts: Callable[[str, dict], bool]
    verify_signatures: bool = True
    send_metadata: bool = False
    approval_mode: str = "observe"
    log_verification: bool = True
    poll_interval_s: float = 5.0
    debounce_s: float = 0.25
    recheck_s: float = 30.0


@attrs.frozen
class LogView:
    """A graph's log verification as the device keeps it: its status, where its chain
    was anchored (None: at genesis), its final heads by boundary."""

    status: str  # off | unverified | ok | alarm
    anchored: int | None = None
    heads: Mapping[int, str] = attrs.Factory(dict)


@attrs.frozen
class Pin:
    state: str
    via: str
    fingerprint: str | None


@attrs.define
class Changes:
    """What one commit of the device changed, in the spec's nouns. Keys are storage
    keys (``sk``) or subscriptions; a value None means gone."""

    held: dict[tuple[str, str], dict | None] = attrs.Factory(dict)
    queued: dict[tuple[str, str], dict | None] = attrs.Factory(dict)
    refused: dict[tuple[str, str], tuple[float, str] | None] = attrs.Factory(dict)
    cursors: dict[Subscription, int | None] = attrs.Factory(dict)
    keyrings: dict[str, dict[int, bytes]] = attrs.Factory(dict)
    relay_epochs: dict[str, int] = attrs.Factory(dict)
    followed: dict[str, bool] = attrs.Factory(dict)  # graph ID -> followed (or no longer)
    views: dict[Subscription, bool] = attrs.Factory(dict)  # subscribed (or no longer)
    pins: dict[str, Pin | None] = attrs.Factory(dict)
    logs: dict[str, LogView | None] = attrs.Factory(dict)

    def __bool__(self) -> bool:
        # every commit asks: plain attribute reads, not attrs.astuple's copy
        return bool(
            self.held or self.queued or self.refused or self.cursors or self.keyrings
            or self.relay_epochs or self.followed or self.views or self.pins
            or self.logs
        )  # fmt: skip


@attrs.frozen
class Finding:
    """A disagreement: the spec rule, what the device was given, what the spec makes
    of it and what the device did."""

    rule: str  # the rules' IDs, as the sentence begins
    detail: str
    graph: str | None = None
    records: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()  # the catalogue IDs it is about

    def __str__(self) -> str:
        return f"{self.rule}: {self.detail}"
