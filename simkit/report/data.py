"""What a report shows, read once from a trace: the exchanges, the timeline, the
disruption spans, the lag and rejection series, convergence, and the moment the
sequence diagram centres on. Markdown, HTML and Perfetto all render this one
reading, so they cannot disagree about what happened.
"""

import re
from collections import Counter, defaultdict

import attrs

from simkit.sim.trace import Trace, TraceEvent

RELAY, NETWORK = "relay", "network"
NOT_DEVICES = frozenset({RELAY, NETWORK, "schedule", "world", "adversary"})

ECHOES = frozenset(
    {("fault", "partition"), ("fault", "error-window"), ("crash", "crash"), ("crash", "restart")}
)
"""Trace events that repeat another one at the same moment: the network's side of a
scheduled Partition/ErrorBurst and of the world's relay-crash/relay-restart. The
timeline lists each thing once; partition and error-window spans are still read
from the network's side, which says when they really began and ended."""

ADVERSARIAL = frozenset({"Adversary", "Steal"})
WINDOW_BEFORE, WINDOW_AFTER = 12, 4
DETAIL_CHARS = 200


def label(event: TraceEvent) -> str:
    """What an event is beyond its kind: its name, what, or fault field."""
    fields = event.fields
    return str(fields.get("name") or fields.get("what") or fields.get("fault") or event.kind)


def describe(fields: dict) -> str:
    """``key=value`` for every field but the ones ``label`` and the time already say."""
    parts = [
        f"{key}={_value(value)}"
        for key, value in sorted(fields.items())
        if key not in ("name", "what", "fault", "at") and value is not None and value != []
    ]
    text = " ".join(parts)
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 1] + "…"


def _value(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(_value(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{k}:{_value(v)}" for k, v in sorted(value.items()))
    return str(value)


@attrs.frozen
class Exchange:
    """One request and how it ended: a response, a timeout, or nothing (the device
    crashed while waiting, or the run ended)."""

    device: str
    xid: int
    seq: int
    start: float
    method: str
    path: str
    size: int | None
    end: float | None = None
    end_seq: int | None = None
    status: int | None = None
    faults: tuple[str, ...] = ()

    @property
    def outcome(self) -> str:
        if self.status is not None:
            return str(self.status)
        return "timeout" if self.end is not None else "unanswered"


@attrs.frozen
class Moment:
    """A timeline row: something the world did to the run, or a client noticed."""

    seq: int
    t: float
    category: str  # fault, adversary, crash, ceremony, drain, alarm, rejected, settled
    actor: str
    what: str
    detail: str

    def cells(self) -> tuple[str, str, str, str, str]:
        return (f"{self.t:.3f}", self.category, self.what, self.actor, self.detail)


def moment(event: TraceEvent) -> Moment | None:
    """The timeline row for an event, or None if it is routine or per-exchange."""
    what = label(event)
    if event.kind in ("fault", "crash"):
        if (event.kind, what) in ECHOES or "xid" in event.fields:
            return None
        if what in ADVERSARIAL or event.actor == "adversary":
            category = "adversary"
        else:
            category = "drain" if event.actor == "world" else event.kind
    elif event.kind == "event" and event.actor == "schedule":
        category = "ceremony"
    elif event.kind == "event" and what in ("log.alarm", "record.rejected"):
        category = "alarm" if what == "log.alarm" else "rejected"
    elif event.kind == "check" and what == "quiescence":
        category = "settled" if event.fields.get("settled") else "not settled"
    else:
        return None
    return Moment(event.seq, event.t, category, event.actor, what, describe(event.fields))


@attrs.frozen
class Span:
    """A stretch of time a row (a device or the relay) was disrupted."""

    row: str
    start: float
    end: float
    kind: str  # partitioned, down, error window, adversary: <mode>


@attrs.frozen
class Convergence:
    """``faults_end``: when the last fault stopped acting (None: no fault);
    ``converged``: the first lag sample from which every later one is 0;
    ``settled``: when the world's quiescence check found it settled;
    ``sampled``: whether the trace has lag samples at all."""

    faults_end: float | None
    converged: float | None
    settled: float | None
    sampled: bool

    def sentence(self) -> str:
        settled = (
            f"the world settled at {self.settled:.1f} s"
            if self.settled is not None
            else "the world did not settle"
        )
        if not self.sampled:
            return f"The trace has no lag samples; {settled}."
        if self.converged is None:
            return f"Cursor lag never returned to 0 for good; {settled}."
        if self.faults_end is None:
            return f"No fault was injected; lag was 0 from {self.converged:.1f} s; {settled}."
        took = self.converged - self.faults_end
        return (
            f"Converged {took:.1f} s after the last fault ended at {self.faults_end:.1f} s "
            f"(every device's lag 0 from {self.converged:.1f} s; samples every 10 s); {settled}."
        )


@attrs.frozen
class Focus:
    """Where the sequence diagram centres: a trace position, what is there (``text``)
    and, for a violation, its whole message."""

    seq: int
    t: float
    kind: str  # violation, alarm, sample
    text: str
    violation: str = ""


@attrs.frozen
class Story:
    """Everything the renderers need, read from one trace and its summary."""

    events: tuple[TraceEvent, ...]
    devices: tuple[str, ...]
    end: float
    exchanges: tuple[Exchange, ...]
    moments: tuple[Moment, ...]
    spans: tuple[Span, ...]
    lags: dict[str, dict[str, list[tuple[float, int]]]]  # graph -> device -> samples
    rejections: dict[str, list[float]]  # device -> times
    convergence: Convergence
    focus: Focus

    @property
    def timeline(self) -> list[Moment]:
        """The moments, with each device's rejections folded into its first one."""
        counts = Counter(m.actor for m in self.moments if m.category == "rejected")
        seen: set[str] = set()
        rows = []
        for m in self.moments:
            if m.category == "rejected":
                if m.actor in seen:
                    continue
                seen.add(m.actor)
                m = attrs.evolve(m, detail=f"first of {counts[m.actor]}: {m.detail}")
            rows.append(m)
        return rows

    def colour_index(self, device: str) -> int:
        """A device keeps one colour in every plot."""
        return self.devices.index(device) if device in self.devices else len(self.devices)


def read(trace: Trace, summary: dict) -> Story:
    events = tuple(trace)
    end = events[-1].t if events else 0.0
    moments = tuple(m for m in map(moment, events) if m is not None)
    spans = _spans(events, end)
    lags = _lags(events)
    return Story(
        events=events,
        devices=tuple(sorted({e.actor for e in events} - NOT_DEVICES)),
        end=end,
        exchanges=_exchanges(events),
        moments=moments,
        spans=spans,
        lags=lags,
        rejections=_rejections(moments),
        convergence=_convergence(moments, spans, lags),
        focus=_focus(events, moments, summary),
    )


def _exchanges(events: tuple[TraceEvent, ...]) -> tuple[Exchange, ...]:
    """Requests matched to their ends by (device, xid), first open request first."""
    found: list[Exchange] = []
    open_: dict[tuple[str, object], int] = {}
    for e in events:
        xid = e.fields.get("xid")
        if e.kind == "request":
            open_[e.actor, xid] = len(found)
            f = e.fields
            found.append(Exchange(e.actor, xid, e.seq, e.t, f["method"], f["path"], f.get("size")))
        elif e.kind == "response" and (e.actor, xid) in open_:
            i = open_.pop((e.actor, xid))
            found[i] = attrs.evolve(found[i], end=e.t, end_seq=e.seq, status=e.fields["status"])
        elif e.kind == "fault" and xid is not None:
            device = e.fields.get("device", e.actor)
            i = open_.get((device, xid))
            if i is None:
                continue
            x = found[i]
            found[i] = attrs.evolve(x, faults=(*x.faults, label(e)))
            if e.actor == device:  # the device gave up: a timeout
                open_.pop((device, xid))
                found[i] = attrs.evolve(found[i], end=e.t, end_seq=e.seq)
    return tuple(found)


def _spans(events: tuple[TraceEvent, ...], end: float) -> tuple[Span, ...]:
    """Partitions (partition .. heal), crashes (crash .. restart), error windows and
    adversary modes (switch-on .. switch-off), each still open at the end closed there."""
    spans: list[Span] = []
    open_: dict[tuple[str, str], float] = {}

    def start(kind: str, rows: list[str], t: float) -> None:
        for row in rows:
            open_.setdefault((kind, row), t)

    def stop(kind: str, rows: list[str], t: float) -> None:
        for row in rows:
            if (kind, row) in open_:
                spans.append(Span(row, open_.pop((kind, row)), t, kind))

    for e in events:
        what, f = label(e), e.fields
        if e.actor == NETWORK and what in ("partition", "heal"):
            (start if what == "partition" else stop)("partitioned", f["devices"], e.t)
        elif what in ("device-crash", "device-restart", "relay-crash", "relay-restart"):
            (start if what.endswith("crash") else stop)("down", [e.actor], e.t)
        elif what == "error-window" and f["until"] > e.t:
            spans.append(Span(RELAY, e.t, min(f["until"], end), "error window"))
        elif e.actor == "schedule" and what == "Adversary":
            start(f"adversary: {f['mode']}", f.get("targets") or [RELAY], e.t)
        elif e.actor == "adversary" and what == "switch-off":
            kind = f"adversary: {f['mode']}"
            stop(kind, sorted(row for k, row in open_ if k == kind), e.t)
    spans += [Span(row, t, end, kind) for (kind, row), t in sorted(open_.items())]
    return tuple(sorted(spans, key=lambda s: (s.start, s.row, s.kind)))


def _lags(events: tuple[TraceEvent, ...]) -> dict[str, dict[str, list[tuple[float, int]]]]:
    lags: dict[str, dict[str, list[tuple[float, int]]]] = defaultdict(lambda: defaultdict(list))
    for e in events:
        if e.kind == "check" and e.fields.get("what") == "lag":
            for device, lag in sorted(e.fields["lags"].items()):
                lags[e.fields["graph"]][device].append((e.t, lag))
    return {graph: dict(sorted(per.items())) for graph, per in sorted(lags.items())}


def _rejections(moments: tuple[Moment, ...]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for m in moments:
        if m.category == "rejected":
            out[m.actor].append(m.t)
    return dict(sorted(out.items()))


def worst_lag(lags: dict[str, dict[str, list[tuple[float, int]]]]) -> list[tuple[float, int]]:
    """The largest lag of any device in any graph, per sample time."""
    worst: dict[float, int] = {}
    for per_device in lags.values():
        for samples in per_device.values():
            for t, lag in samples:
                worst[t] = max(worst.get(t, 0), lag)
    return sorted(worst.items())


def _convergence(moments, spans, lags) -> Convergence:
    """Faults end when the last disruption span closes or the last scheduled fault or
    adversary action happens. An adversary mode's span does not count (most are never
    switched off); its switch-on and any switch-off do."""
    ends = [s.end for s in spans if not s.kind.startswith("adversary")]
    ends += [m.t for m in moments if m.category in ("fault", "adversary")]
    faults_end = max(ends) if ends else None
    converged = None
    samples = worst_lag(lags)
    for t, lag in reversed(samples):
        if lag or (faults_end is not None and t < faults_end):
            break
        converged = t
    settled = next((m.t for m in moments if m.category == "settled"), None)
    return Convergence(faults_end, converged, settled, bool(samples))


_TRACE_SEQ = re.compile(r"trace#(\d+)")


def _focus(events: tuple[TraceEvent, ...], moments: tuple[Moment, ...], summary: dict) -> Focus:
    """The first violation that names a trace position (``trace#N``, as simkit's
    Violation prints it), else the first log alarm, else the first timeline moment
    that is not routine, else the middle of the run."""
    if not events:
        return Focus(0, 0.0, "sample", "an empty trace")
    last = len(events) - 1
    seen = [
        (int(match.group(1)), inv["name"], text)
        for inv in summary["invariants"]
        if not inv["passed"]
        for text in inv["violations"]
        if (match := _TRACE_SEQ.search(text))
    ]
    if seen:
        seq, name, text = min(seen)
        seq = min(seq, last)
        return Focus(seq, events[seq].t, "violation", f"the first violation of {name}", text)
    alarm = next((m for m in moments if m.category == "alarm"), None)
    if alarm is not None:
        return Focus(alarm.seq, alarm.t, "alarm", f"the first log.alarm ({alarm.actor})")
    first = next((m for m in moments if m.category not in ("drain", "settled")), None)
    if first is not None:
        return Focus(first.seq, first.t, "sample", f"the first {first.category}: {first.what}")
    middle = events[last // 2]
    return Focus(middle.seq, middle.t, "sample", "the middle of the run")


def window(story: Story) -> tuple[list[Exchange], int, int]:
    """The exchanges around the focus (``WINDOW_BEFORE`` that started before it,
    ``WINDOW_AFTER`` from it on) and the trace positions they span."""
    seq = story.focus.seq
    before = [x for x in story.exchanges if x.seq < seq][-WINDOW_BEFORE:]
    after = [x for x in story.exchanges if x.seq >= seq][:WINDOW_AFTER]
    chosen = before + after
    lo = min([seq, *(x.seq for x in chosen)])
    hi = max([seq, *(x.end_seq for x in chosen if x.end_seq is not None), *(x.seq for x in chosen)])
    return chosen, lo, hi
