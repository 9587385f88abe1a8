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
        if key not in ("name", "what", "fault", "at") and value not in (None, [], (), {})
    ]
    text = " ".join(parts)
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 1] + "…"


def _value(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):  # a tuple in memory is a list once saved
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


CEREMONY_RESULTS = frozenset({"device.register", "graph.rotate", "device.revoke"})
"""Relay events that show a ceremony took effect (a registration, a new epoch, a
revocation): timeline rows, under ``setup`` while the world sets itself up."""


def moment(event: TraceEvent, phase: "Phase") -> Moment | None:
    """The timeline row for an event, or None if it is routine or per-exchange."""
    what, f = label(event), event.fields
    actor = event.actor
    if event.kind in ("fault", "crash"):
        if (event.kind, what) in ECHOES or "xid" in f:
            return None
        if actor in phase.stolen and what in ("device-crash", "device-restart"):
            category, what = "adversary", f"{what} (a thief runs it)"
        elif actor in phase.revoked and what == "device-crash":
            category, what = "revoked", "leaves the fleet"
        elif what in ADVERSARIAL or actor == "adversary":
            category = "adversary"
        else:
            category = "drain" if actor == "world" else event.kind
    elif event.kind == "event" and actor == "schedule":
        category = "setup" if phase.setting_up else "ceremony"
    elif event.kind == "event" and what == "setup.done":
        category = "setup"
    elif event.kind == "event" and actor == RELAY and what in CEREMONY_RESULTS:
        category = "setup" if phase.setting_up else "ceremony"
        actor = f.get("device_id", actor)
    elif event.kind == "event" and what in ("log.alarm", "record.rejected"):
        category = "alarm" if what == "log.alarm" else "rejected"
    elif event.kind == "check" and what == "quiescence":
        category = "settled" if f.get("settled") else "not settled"
    else:
        return None
    return Moment(event.seq, event.t, category, actor, what, describe(f))


@attrs.define
class Phase:
    """What the timeline needs to remember while reading: whether the world is still
    setting up, and which devices were revoked or stolen (their crash is no fault)."""

    setting_up: bool = True
    revoked: dict[str, float] = attrs.Factory(dict)
    stolen: set[str] = attrs.Factory(set)

    def see(self, event: TraceEvent) -> None:
        name = event.fields.get("name")
        if event.actor == "world" and name == "setup.done":
            self.setting_up = False
        elif event.actor == "schedule" and name in ("Revoke", "Steal"):
            self.revoked.setdefault(event.fields["device"], event.t)
            if name == "Steal":
                self.stolen.add(event.fields["device"])


def _moments(events: tuple[TraceEvent, ...]) -> tuple[tuple[Moment, ...], Phase]:
    phase = Phase(setting_up=any(_is_setup_done(e) for e in events))
    out = []
    for e in events:
        phase.see(e)
        m = moment(e, phase)
        if m is not None:
            out.append(m)
    return tuple(out), phase


def _is_setup_done(e: TraceEvent) -> bool:
    return e.kind == "event" and e.actor == "world" and e.fields.get("name") == "setup.done"


@attrs.frozen
class Span:
    """A stretch of time a row (a device or the relay) was disrupted."""

    row: str
    start: float
    end: float
    kind: str  # partitioned, down, error window, adversary: <mode>


@attrs.frozen
class ConvergenceTimes:
    """``faults_end``: when the last fault stopped acting (None: no fault);
    ``converged``: the first lag sample from which every later one is 0 (it may come
    before ``faults_end``: a last fault that did not disturb the devices' lag);
    ``settled``: when the world's quiescence check found it settled;
    ``sampled``: whether the trace has lag samples at all."""

    faults_end: float | None
    converged: float | None
    settled: float | None
    sampled: bool
    writes_end: float | None = None  # the last application write (lag follows writes)

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
        if self.converged < self.faults_end:
            return (
                f"Every device's lag was already 0 when the last fault ended at "
                f"{self.faults_end:.1f} s (0 from {self.converged:.1f} s on; samples every "
                f"10 s); {settled}."
            )
        took = self.converged - self.faults_end
        writes = (
            f"; the workload wrote until {self.writes_end:.1f} s"
            if self.writes_end is not None and self.writes_end > self.faults_end
            else ""
        )
        return (
            f"Converged {took:.1f} s after the last fault ended at {self.faults_end:.1f} s "
            f"(every device's lag 0 from {self.converged:.1f} s{writes}; samples every 10 s); "
            f"{settled}."
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
    convergence: ConvergenceTimes
    focus: Focus
    revoked: dict[str, float] = attrs.Factory(dict)  # device -> when it was revoked
    # trace positions the diagram draws besides its window, each with the part it
    # played: a violation's evidence, or a clean run's ceremonies, faults and alarms
    cited: tuple[tuple[int, str], ...] = ()

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
    moments, phase = _moments(events)
    spans = _spans(events, end, phase)
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
        convergence=_convergence(moments, spans, lags, events),
        focus=_focus(events, moments, summary),
        revoked=dict(sorted(phase.revoked.items())),
        cited=_plot(moments) if summary.get("violation") is None else (),
    )


PLOT = (
    "ceremony", "adversary", "revoked", "fault", "crash", "alarm", "rejected", "settled",
    "not settled",
)  # fmt: skip
MAX_CITED = 40


def _plot(moments: tuple[Moment, ...]) -> tuple[tuple[int, str], ...]:
    """What a run without a violation went through, for its diagram: every ceremony,
    fault, crash, alarm, each device's first rejection and how it ended (the first
    ``MAX_CITED``)."""
    rejected: set[str] = set()
    out = []
    for m in moments:
        if m.category not in PLOT or (m.category == "rejected" and m.actor in rejected):
            continue
        if m.category == "rejected":
            rejected.add(m.actor)
        out.append((m.seq, m.category))
    return tuple(out[:MAX_CITED])


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


def _spans(events: tuple[TraceEvent, ...], end: float, phase: Phase) -> tuple[Span, ...]:
    """Partitions (partition .. heal), crashes (crash .. restart), error windows and
    adversary modes (switch-on .. switch-off), each still open at the end closed there.
    A revoked device is ``revoked`` from the moment it leaves the fleet (no fault: it
    is gone on purpose); a stolen one runs under the adversary from the theft on."""
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
        elif e.actor in phase.stolen and what in ("device-crash", "device-restart"):
            continue
        elif e.actor in phase.revoked and what == "device-crash" and e.t >= phase.revoked[e.actor]:
            start("revoked", [e.actor], e.t)
        elif what in ("device-crash", "device-restart", "relay-crash", "relay-restart"):
            (start if what.endswith("crash") else stop)("down", [e.actor], e.t)
        elif what == "error-window" and f["until"] > e.t:
            spans.append(Span(RELAY, e.t, min(f["until"], end), "error window"))
        elif e.actor == "schedule" and what == "Adversary":
            start(f"adversary: {f['mode']}", f.get("targets") or [RELAY], e.t)
        elif e.actor == "schedule" and what == "Steal":
            start("adversary: stolen", [f["device"]], e.t)
        elif e.actor == "adversary" and what == "switch-off":
            kind = f"adversary: {f['mode']}"
            stop(kind, sorted(row for k, row in open_ if k == kind), e.t)
    spans += [Span(row, t, end, kind) for (kind, row), t in sorted(open_.items())]
    return tuple(sorted(spans, key=lambda s: (s.start, s.row, s.kind)))


def is_fault(span: Span) -> bool:
    """Whether a span counts as a fault for convergence: not an adversary mode (most
    run to the end; their switches count instead) and not a revocation."""
    return not span.kind.startswith("adversary") and span.kind != "revoked"


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
    """Per sample time, the lag farthest from 0 of any device in any graph (a negative
    lag, a device past the relay's counter, is as far from converged as a positive one)."""
    worst: dict[float, int] = {}
    for per_device in lags.values():
        for samples in per_device.values():
            for t, lag in samples:
                if abs(lag) > abs(worst.get(t, 0)) or (lag > 0 and lag == -worst.get(t, 0)):
                    worst[t] = lag
                else:
                    worst.setdefault(t, 0)
    return sorted(worst.items())


def _convergence(moments, spans, lags, events) -> ConvergenceTimes:
    """Faults end when the last disruption span closes or the last scheduled fault or
    adversary action happens. An adversary mode's span does not count (most are never
    switched off; its switch-on and any switch-off do), nor does a revocation (the
    device is gone on purpose, not disrupted)."""
    ends = [s.end for s in spans if is_fault(s)]
    ends += [m.t for m in moments if m.category in ("fault", "adversary")]
    faults_end = max(ends) if ends else None
    converged = None
    samples = worst_lag(lags)
    for t, lag in reversed(samples):
        if lag:
            break
        converged = t
    settled = next((m.t for m in moments if m.category == "settled"), None)
    writes = [e.t for e in events if e.kind == "event" and e.fields.get("name") == "app.write"]
    return ConvergenceTimes(
        faults_end, converged, settled, bool(samples), max(writes, default=None)
    )


_TRACE_SEQ = re.compile(r"trace#(\d+)")


def _focus(events: tuple[TraceEvent, ...], moments: tuple[Moment, ...], summary: dict) -> Focus:
    """The summary's first violation, else the first violation that names a trace
    position (``trace#N``, as simkit's Violation prints it), else the first log
    alarm, else the first timeline moment that is not routine (nor setup), else the
    middle of the run."""
    if not events:
        return Focus(0, 0.0, "sample", "an empty trace")
    last = len(events) - 1
    first = summary.get("violation")
    if first is not None and isinstance(first.get("trace_seq"), int):
        seq = min(first["trace_seq"], last)
        text = f"the first violation of {first['invariant']}"
        return Focus(seq, events[seq].t, "violation", text, first["text"])
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
    first = next((m for m in moments if m.category not in ("drain", "settled", "setup")), None)
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
