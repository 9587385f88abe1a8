"""The trace as Chrome trace-event JSON, which Perfetto and chrome://tracing open.

One thread track per device, then one per other actor (relay, network, schedule,
world, adversary). Each exchange is a complete ("X") slice from its request to its
response or timeout; everything else is an instant ("i") on its actor's track; the
lag samples are counters ("C"), one counter track per graph.

A device can have exchanges in flight at once (a blob upload beside a sync), and
slices on one track must nest, so an exchange that overlaps an open one goes on an
extra track for that device, labelled "<device> (2)", sorted right after it.
"""

import json

from simkit.report.data import Exchange, Story, label

PID = 1


def _us(t: float) -> int:
    return round(t * 1_000_000)


def _lanes(story: Story) -> dict[tuple[str, int], int]:
    """Each exchange's (device, xid) -> its lane (0 = the device's own track)."""
    lane_of: dict[tuple[str, int], int] = {}
    busy_until: dict[str, list[float]] = {}
    for x in story.exchanges:
        lanes = busy_until.setdefault(x.device, [])
        end = x.start if x.end is None else x.end
        lane = next((i for i, until in enumerate(lanes) if until <= x.start), len(lanes))
        if lane == len(lanes):
            lanes.append(end)
        else:
            lanes[lane] = end
        lane_of[x.device, x.xid] = lane
    return lane_of


def _tracks(story: Story, lane_of: dict[tuple[str, int], int]) -> dict[tuple[str, int], str]:
    """(actor, lane) -> track name, in display order."""
    lanes = {(x.device, lane_of[x.device, x.xid]) for x in story.exchanges}
    lanes |= {(device, 0) for device in story.devices}
    others = sorted({e.actor for e in story.events} - set(story.devices))
    ordered = sorted(lanes) + [(actor, 0) for actor in others]
    return {key: key[0] if key[1] == 0 else f"{key[0]} ({key[1] + 1})" for key in ordered}


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


def perfetto_json(story: Story, title: str) -> bytes:
    lane_of = _lanes(story)
    tracks = _tracks(story, lane_of)
    tid = {key: i for i, key in enumerate(tracks, start=1)}
    out: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": PID, "args": {"name": title}},
    ]
    for key, name in tracks.items():
        meta = {"pid": PID, "tid": tid[key], "ph": "M"}
        out.append({**meta, "name": "thread_name", "args": {"name": name}})
        out.append({**meta, "name": "thread_sort_index", "args": {"sort_index": tid[key]}})
    exchanges = {x.seq: x for x in story.exchanges}
    ended = {x.end_seq for x in story.exchanges if x.end_seq is not None}
    for e in story.events:
        if e.seq in exchanges:
            x = exchanges[e.seq]
            out.append(_slice(x, tid[x.device, lane_of[x.device, x.xid]]))
        elif e.kind == "check" and e.fields.get("what") == "lag":
            name = f"cursor lag {e.fields['graph']}"
            out.append(
                {"name": name, "ph": "C", "ts": _us(e.t), "pid": PID, "args": e.fields["lags"]}
            )
        elif e.seq not in ended:
            out.append(
                {
                    "name": label(e),
                    "cat": e.kind,
                    "ph": "i",
                    "s": "t",
                    "ts": _us(e.t),
                    "pid": PID,
                    "tid": tid[e.actor, 0],
                    "args": e.fields,
                }
            )
    lines = ",\n".join(json.dumps(event, sort_keys=True) for event in out)
    return ('{"displayTimeUnit": "ms", "traceEvents": [\n' + lines + "\n]}\n").encode()
