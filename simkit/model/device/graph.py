"""What a device model keeps per graph: what the device was given (served ops,
rosters, wraps, log pages, answers) and what it holds, as committed."""

from collections import Counter, defaultdict

import attrs

from simkit.model.device.log import LogSeen
from simkit.model.device.views import LogView, Subscription

ROSTERS_KEPT = 8  # per graph: enough to cover a page's whole processing window


@attrs.define
class Served:
    """An op as a pull answer served it to one subscription, and when (the model's tick,
    and the device's clock in ms)."""

    op: dict
    sub: Subscription
    tick: int
    boot: int
    clock: int | None = None


@attrs.define
class PushSent:
    """A push the device sent: its graph, its ops in order, and its task."""

    sk: str
    ops: list[dict]
    task: object


@attrs.frozen
class PushRun:
    """What a device held when it sent the first batch of a run of pushes to a graph
    (it may seal every batch then): its epoch and its queued versions."""

    epoch: int
    queued: dict
    previous: int = 0  # the tick of the graph's last push before the run (client rule 11)


@attrs.define
class Graph:
    """What the device was given and what it keeps, for one graph (by storage key)."""

    sk: str
    gid: str  # the graph ID as this device sends it
    keys: dict[int, bytes] = attrs.Factory(dict)  # held, as committed
    opened: dict[int, set[bytes]] = attrs.Factory(lambda: defaultdict(set))  # from wraps
    unopenable: dict[int, list] = attrs.Factory(dict)  # epoch -> [the wrap, discarded since]
    served_unopenable: set[int] = attrs.Factory(set)  # epochs any keys answer served so
    discards_cut: bool = False  # a discard since the last keys answer could not reach the relay
    relay_epoch: int = 0  # the highest epoch an answer client rule 5 names showed
    shown_epoch: int = 0  # the highest epoch any answer showed (key gaps, POST keys too)
    noted_epoch: int = 0  # the relay's epoch as the device keeps it
    keys_asked: int = 0  # when it last asked for keys (tick)
    keys_owed: tuple | None = None  # (task, epoch): a pull served an op under an epoch it lacked
    held: dict[str, dict] = attrs.Factory(dict)
    history: dict[str, list[dict]] = attrs.Factory(lambda: defaultdict(list))  # held before
    queued: dict[str, dict] = attrs.Factory(dict)
    before: dict[str, dict | None] = attrs.Factory(dict)  # held before a queued write
    refused: dict[str, tuple[float, str]] = attrs.Factory(dict)
    cursors: dict[Subscription, int] = attrs.Factory(dict)
    served: dict[int, list[Served]] = attrs.Factory(dict)  # seq -> the ops served at it
    served_seqs: list[int] = attrs.Factory(list)  # the same seqs, sorted
    served_by_record: dict[str, list[Served]] = attrs.Factory(lambda: defaultdict(list))
    bounds: dict[Subscription, int] = attrs.Factory(dict)  # the furthest cursor served
    counter: int = 0  # the highest cursor any answer gave: the relay's counter is at least
    top_served: int = 0  # the highest seq of an op any pull served: a logged write (F41)
    whole: set[int] = attrs.Factory(set)  # unfiltered cursors an exhausted pull reached
    rosters: list[tuple[int, int, dict]] = attrs.Factory(list)  # (tick, boot, entries)
    roster_clocks: dict[int, int] = attrs.Factory(dict)  # tick -> the device's clock then
    keygaps: dict = attrs.Factory(dict)  # the last keygaps answer's entries
    pushes: list[tuple[int, int, int, dict]] = attrs.Factory(list)  # (tick, n, sent, answer)
    settled: dict[str, str | None] = attrs.Factory(dict)  # record -> reason refused (None: ok)
    accepted: dict[str, object] = attrs.Factory(dict)  # record -> the rev a push answer accepted
    log: LogSeen = attrs.Factory(lambda self: LogSeen(self.sk), takes_self=True)
    log_view: LogView | None = None
    log_view_at: int = 0  # the tick it was committed at
    claims_from: int = 0  # the tick of its last wipe: checkpoints served since count
    minted: set[int] = attrs.Factory(set)  # epochs this device posted as a new epoch
    restamps: dict[str, int] = attrs.Factory(dict)  # refused rev-too-far-ahead, push order
    pulled: int = 0  # when it last sent a pull (tick)
    pushed: tuple[int, int] = (0, 0)  # when it sent its last two pushes (ticks)
    push_body: bytes = b""  # the last push's body
    signed: Counter = attrs.Factory(Counter)  # write kind -> pushed ops (pushes.py samples)
