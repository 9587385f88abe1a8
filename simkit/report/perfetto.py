"""The trace as Chrome trace-event JSON, which Perfetto and chrome://tracing open.

One thread track per device, then one per other actor (relay, network, schedule,
world, adversary). Each exchange is a complete ("X") slice from its request to its
response or timeout; everything else is an instant ("i") on its actor's track; the
lag samples are counters ("C"), one counter track per graph.

A device can have exchanges in flight at once (a blob upload beside a sync), and
slices on one track must nest, so an exchange that overlaps an open one goes on an
extra track for that device, labelled "<device> (2)", sorted right after it.

Disruptions are spans, not instants: partitions, crashes, error windows, adversary
modes and revocations are slices on a "<row> faults" track under their device (or
the relay). Flow arrows ("s" and "f" events, Perfetto's v1 flows) join each request
to the relay's delivery of it and that delivery to the response, and each write's
``push.accepted`` to every ``record.applied`` that delivered it to another device.
A flow event binds to the slice last opened on its track, so each is written right
after the slice or instant it starts or ends at.
"""

import json

from simkit.report.data import Exchange, Span, Story, label
from simkit.report.history import operations

PID = 1


def _us(t: float) -> int:
    return round(t * 1_000_000)


def _lanes(intervals: list[tuple[str, object, float, float]]) -> dict[tuple[str, object], int]:
    """(row, key) -> lane: the first lane of the row free at the interval's start."""
    lane_of: dict[tuple[str, object], int] = {}
    busy_until: dict[str, list[float]] = {}
    for row, key, start, end in intervals:
        lanes = busy_until.setdefault(row, [])
        lane = next((i for i, until in enumerate(lanes) if until <= start), len(lanes))
        if lane == len(lanes):
            lanes.append(end)
        else:
            lanes[lane] = end
        lane_of[row, key] = lane
    return lane_of


def _exchange_lanes(story: Story) -> dict[tuple[str, object], int]:
    return _lanes(
        [(x.device, x.xid, x.start, x.start if x.end is None else x.end) for x in story.exchanges]
    )


def _span_lanes(story: Story) -> dict[tuple[str, object], int]:
    return _lanes([(s.row, i, s.start, s.end) for i, s in enumerate(story.spans)])


def _tracks(story: Story, exchange_lane, span_lane) -> dict[tuple[str, str, int], str]:
    """(actor, "" or "faults", lane) -> track name, in display order: each device's
    exchange lanes then its faults lanes, then the other actors (the relay's faults
    after the relay)."""
    keys = {(d, "", lane) for (d, _), lane in exchange_lane.items()}
    keys |= {(d, "", 0) for d in story.devices}
    keys |= {(row, "faults", lane) for (row, _), lane in span_lane.items()}
    others = sorted({e.actor for e in story.events} - set(story.devices))
    keys |= {(actor, "", 0) for actor in others}
    order = {d: i for i, d in enumerate([*story.devices, *others])}
    ordered = sorted(keys, key=lambda k: (order.get(k[0], len(order)), k[0], k[1], k[2]))
    return {key: _track_name(*key) for key in ordered}


def _track_name(actor: str, kind: str, lane: int) -> str:
    name = f"{actor} faults" if kind else actor
    return name if lane == 0 else f"{name} ({lane + 1})"


def _slice(x: Exchange, tid: int) -> dict:
    end = x.start if x.end is None else x.end
    args = {"xid": x.xid, "outcome": x.outcome, "size": x.size}
    if x.faults:
        args["faults"] = list(x.faults)
    return {
        "name": f"{x.method} {x.path}",
        "cat": "exchange",
        "ph": "X",
        "ts": _us(x.start),
        "dur": _us(end) - _us(x.start),
        "pid": PID,
        "tid": tid,
        "args": args,
    }


def _span(s: Span, tid: int) -> dict:
    return {
        "name": s.kind,
        "cat": "fault",
        "ph": "X",
        "ts": _us(s.start),
        "dur": _us(s.end) - _us(s.start),
        "pid": PID,
        "tid": tid,
        "args": {"row": s.row, "from_s": s.start, "until_s": s.end},
    }


def _flow(phase: str, name: str, ident: int, t: float, tid: int) -> dict:
    event = {"name": name, "cat": "flow", "ph": phase, "id": ident, "ts": _us(t), "pid": PID}
    event["tid"] = tid
    if phase == "f":
        event["bp"] = "e"  # bind to the slice it lands in, not the next one
    return event


def _flows(story: Story) -> dict[int, list[tuple[str, str, int]]]:
    """Trace position -> the flow ends to write right after that event's slice:
    (phase, name, id). Ids: 2n and 2n+1 for exchange n's two hops, then one per write."""
    after: dict[int, list[tuple[str, str, int]]] = {}
    index = {(x.device, x.xid): n for n, x in enumerate(story.exchanges)}
    for n, x in enumerate(story.exchanges):
        after.setdefault(x.seq, []).append(("s", "request", 2 * n))
    for e in story.events:
        n = (
            index.get((e.fields.get("device"), e.fields.get("xid")))
            if e.kind == "delivery"
            else None
        )
        if n is None or e.actor != "relay":
            continue
        after.setdefault(e.seq, []).append(("f", "request", 2 * n))
        x = story.exchanges[n]
        if not e.fields.get("duplicate") and x.end_seq is not None and x.status is not None:
            after[e.seq].append(("s", "response", 2 * n + 1))
            after.setdefault(x.end_seq, []).append(("f", "response", 2 * n + 1))
    first = 2 * len(story.exchanges)
    for i, op in enumerate(operations(story)):
        applied = [d for d in op.deliveries if d.refused is None and not d.newer]
        if op.ack_seq is None or not applied:
            continue
        after.setdefault(op.ack_seq, []).append(("s", "delivered", first + i))
        for d in applied:
            after.setdefault(d.seq, []).append(("f", "delivered", first + i))
    return after


def perfetto_json(story: Story, title: str) -> bytes:
    exchange_lane, span_lane = _exchange_lanes(story), _span_lanes(story)
    tracks = _tracks(story, exchange_lane, span_lane)
    tid = {key: i for i, key in enumerate(tracks, start=1)}
    out: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": PID, "args": {"name": title}},
    ]
    for key, name in tracks.items():
        meta = {"pid": PID, "tid": tid[key], "ph": "M"}
        out.append({**meta, "name": "thread_name", "args": {"name": name}})
        out.append({**meta, "name": "thread_sort_index", "args": {"sort_index": tid[key]}})
    for i, s in enumerate(story.spans):
        out.append(_span(s, tid[s.row, "faults", span_lane[s.row, i]]))
    exchanges = {x.seq: x for x in story.exchanges}
    ended = {x.end_seq: x for x in story.exchanges if x.end_seq is not None}
    flows = _flows(story)
    for e in story.events:
        if e.seq in exchanges:
            x = exchanges[e.seq]
            track = tid[x.device, "", exchange_lane[x.device, x.xid]]
            out.append(_slice(x, track))
        elif e.kind == "check" and e.fields.get("what") == "lag":
            name = f"cursor lag {e.fields['graph']}"
            out.append(
                {"name": name, "ph": "C", "ts": _us(e.t), "pid": PID, "args": e.fields["lags"]}
            )
            continue
        elif e.seq in ended:
            x = ended[e.seq]
            track = tid[x.device, "", exchange_lane[x.device, x.xid]]
        else:
            track = tid[e.actor, "", 0]
            out.append(
                {
                    "name": label(e),
                    "cat": e.kind,
                    "ph": "i",
                    "s": "t",
                    "ts": _us(e.t),
                    "pid": PID,
                    "tid": track,
                    "args": e.fields,
                }
            )
        out += [
            _flow(phase, name, ident, e.t, track) for phase, name, ident in flows.get(e.seq, ())
        ]
    lines = ",\n".join(json.dumps(event, sort_keys=True) for event in out)
    return ('{"displayTimeUnit": "ms", "traceEvents": [\n' + lines + "\n]}\n").encode()
