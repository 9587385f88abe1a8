"""The report's plots, all on one time axis (0 to the end of the run) so they line
up down the page: cursor lag per graph, convergence, rejected records, and the
lanes of alarms and faults."""

import math
from collections.abc import Callable

import attrs

from simkit.protocol.http import Refused
from simkit.relay.routing import match
from simkit.report import svg
from simkit.report.data import RELAY, Story, is_fault, worst_lag
from simkit.report.history import Operation, latencies
from simkit.sim.behaviours import route_name

LINE_HEIGHT = 200
SMALL_CHAR_PX = 6  # an estimate of one character's width at the 10 px label font
ROW_HEIGHT = 28
TIME_AXIS = "virtual time (s)"
TOP_ROW = "world"

SPAN_COLOURS = {
    "partitioned": "#999999",
    "down": "#000000",
    "error window": "#56B4E9",
    "revoked": "#E5D8BD",
}
ADVERSARY_COLOUR = "#CC79A7"
MARKERS = {  # category -> (shape, colour)
    "alarm": ("diamond", "#D55E00"),
    "rejected": ("triangle", "#E69F00"),
    "fault": ("tick", "#000000"),
    "adversary": ("tick", ADVERSARY_COLOUR),
    "ceremony": ("tick", "#009E73"),
    "setup": ("tick", "#7FC9B0"),
    "revoked": ("tick", "#8C6D31"),
    "drain": ("tick", "#0072B2"),
    "settled": ("tick", "#0072B2"),
    "not settled": ("tick", "#D55E00"),
}


@attrs.frozen
class Figure:
    heading: str
    caption: str
    svg: str


@attrs.frozen
class Series:
    name: str
    colour: str
    dash: str
    points: list[tuple[float, float]]


Shading = Callable[[svg.Frame], tuple[list[str], list[tuple[str, str, str]]]]


def figures(story: Story, ops: tuple[Operation, ...]) -> list[Figure]:
    return [
        *lag_figures(story),
        convergence_figure(story),
        latency_figure(story, ops),
        availability_figure(story),
        rejected_figure(story),
        alarms_figure(story),
        requests_figure(story),
    ]


def _frame(story: Story, height: float, y_range: tuple[float, float] = (0.0, 1.0)) -> svg.Frame:
    return svg.Frame.below_legend(height, (0.0, max(story.end, 1.0)), y_range)


def _device_series(story: Story, per_device: dict[str, list[tuple[float, float]]]) -> list[Series]:
    return [
        Series(device, *svg.stroke(story.colour_index(device)), points)
        for device, points in per_device.items()
    ]


def _line_chart(
    ident: str,
    kind: str,
    title: str,
    story: Story,
    series: list[Series],
    y_title: str,
    *,
    stairs: bool = False,
    shading: Shading | None = None,
    empty: str = "",
) -> str:
    """A line per series under a legend. ``shading`` draws what goes under the lines
    (given the frame, once the data has set its scale) and names its legend items."""
    values = [y for s in series for _, y in s.points]
    low, peak = min(values, default=0), max(values, default=0)
    bottom = -svg.nice_top(-low) if low < 0 else 0.0
    frame = _frame(story, LINE_HEIGHT, (bottom, svg.nice_top(peak)))
    under, extra = shading(frame) if shading else ([], [])
    if bottom < 0:
        under, extra = [*_below_zero(frame), *under], [*extra, (BELOW_ZERO, NEGATIVE, "band")]
    parts = [*svg.x_axis(frame, TIME_AXIS), *svg.y_axis(frame, y_title), *under]
    parts += [
        svg.polyline(frame, s.points, s.colour, s.dash, stairs, s.name, _width(i, len(series)))
        for i, s in enumerate(series)
    ]
    if not series:
        parts.append(svg.message(frame, empty))
    parts += svg.legend(frame, [(s.name, s.colour, s.dash) for s in series] + list(extra))
    return svg.document(ident, kind, title, frame, parts)


NEGATIVE = "#F0E442"
BELOW_ZERO = "below 0: ahead of the relay"


def _below_zero(frame: svg.Frame) -> list[str]:
    """A lag below 0 means a device's cursor is past the relay's counter: it was served
    ops the honest relay never logged (a forked or rolled-back history). The band
    and the 0 line say so inside the plot."""
    tip = "Below 0: the device's cursor is past the relay's counter (a forked history)"
    zero = frame.y(0)
    return [
        svg.band(frame, frame.x_range[0], frame.x_range[1], NEGATIVE, zero, frame.bottom, tip, 0.2),
        svg.line(frame.left, zero, frame.right, zero, class_="axis"),
    ]


def _width(i: int, count: int) -> float:
    """Earlier lines are drawn wider, so lines on top of each other (all devices at
    lag 0) show as nested stripes of their colours instead of hiding each other."""
    return 2 + 1.5 * min(count - 1 - i, 3)


def lag_figures(story: Story) -> list[Figure]:
    caption = (
        "How many ops each device has yet to pull: the relay's counter for the graph minus "
        "the device's cursor, sampled every 10 s of virtual time. Below 0 (shaded yellow "
        "when it happens), the device's cursor is past the relay's counter: it was served "
        "ops the honest relay never logged, a forked or rolled-back history."
    )
    graphs = story.lags or {"": {}}
    return [
        Figure(
            f"Cursor lag in {graph}" if graph else "Cursor lag",
            caption,
            _line_chart(
                f"plot-lag-{i}",
                "plot-lag",
                f"Cursor lag per device in {graph or 'no graph'}",
                story,
                _device_series(story, per_device),
                "ops behind",
                empty="No lag samples: the run was shorter than one sample interval.",
            ),
        )
        for i, (graph, per_device) in enumerate(graphs.items(), start=1)
    ]


def convergence_figure(story: Story) -> Figure:
    c = story.convergence
    lines = [
        ("last fault ends", c.faults_end, "#D55E00", "6 3"),
        ("lag 0 for good", c.converged, "#009E73", "2 3"),
        ("settled (quiescence)", c.settled, "#000000", "8 3 2 3"),
    ]

    def shading(frame: svg.Frame):
        spans = [s for s in story.spans if is_fault(s)]
        under = [
            svg.band(
                frame,
                s.start,
                s.end,
                "#999999",
                frame.top,
                frame.bottom,
                f"{s.row} {s.kind}: {s.start:.1f}-{s.end:.1f} s",
                opacity=0.18,
            )
            for s in spans
        ]
        under += [
            svg.vline(frame, t, colour, dash, f"{name}: {t:.1f} s")
            for name, t, colour, dash in lines
            if t is not None
        ]
        extra = [("faults", "#999999", "band")] if spans else []
        extra += [(name, colour, dash) for name, t, colour, dash in lines if t is not None]
        return under, extra

    worst = worst_lag(story.lags)
    series = [Series("worst lag", "#0072B2", "", worst)] if worst else []
    chart = _line_chart(
        "plot-convergence",
        "plot-convergence",
        "Convergence: worst cursor lag and when faults end",
        story,
        series,
        "ops behind",
        shading=shading,
        empty="No lag samples.",
    )
    caption = (
        "The lag farthest from 0 of any device in any graph, with the faults shaded "
        "(revocations and adversary modes are not faults here: see the lanes below). "
        + c.sentence()
    )
    return Figure("Convergence", caption, chart)


LOWEST_LATENCY = 0.001


def latency_figure(story: Story, ops: tuple[Operation, ...]) -> Figure:
    """Each write at the time it was issued: how long until the relay acknowledged it
    (a dot in its device's colour) and until every other device following its graph
    applied it (a ring); writes never acknowledged as crosses along the top."""
    acked = [(op, op.ack_latency) for op in ops if op.ack_latency is not None]
    spread = [op.replicated for op in ops if op.replicated is not None]
    values = [max(v, LOWEST_LATENCY) for v in [*(v for _, v in acked), *spread]] or [1.0]
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values) * 1.0001))
    frame = _frame(story, LINE_HEIGHT, (lo, max(hi, lo * 10)))
    frame = svg.Frame.below_legend(frame.height, frame.x_range, frame.y_range, log_y=True)
    parts = [*svg.x_axis(frame, TIME_AXIS), *svg.y_axis(frame, "seconds (log scale)")]
    legend = []
    for device in story.devices:
        mine = [
            (op.t, v, f"write #{op.seq} {op.record} in {op.graph}: acknowledged after {v:.3f} s")
            for op, v in acked
            if op.device == device
        ]
        if mine:
            colour, _ = svg.stroke(story.colour_index(device))
            parts.append(svg.scatter(frame, mine, colour))
            legend.append((device, colour, "dot"))
    rings = [
        (op.t, op.replicated, f"write #{op.seq} {op.record}: on every follower after "
         f"{op.replicated:.3f} s")
        for op in ops
        if op.replicated is not None
    ]  # fmt: skip
    if rings:
        parts.append(svg.scatter(frame, rings, "#000000", hollow=True))
        legend.append(("on every follower", "#000000", "ring"))
    lost = [op for op in ops if op.acked is None]
    for op in lost:
        tip = f"write #{op.seq} {op.record} by {op.device}: {op.outcome}"
        parts.append(svg.marker(frame.x(op.t), frame.top + 4, "cross", "#D55E00", tip))
    if lost:
        legend.append(("never acknowledged", "#D55E00", "cross"))
    if not ops:
        parts.append(svg.message(frame, "No application write in this run."))
    parts += svg.legend(frame, legend)
    chart = svg.document(
        "plot-latency", "plot-latency", "Write latency: acknowledged, and applied everywhere",
        frame, parts,
    )  # fmt: skip
    caption = (
        "Each write at the time it was issued. Dots: seconds until the relay acknowledged "
        "it (push.accepted), in the writer's colour; rings: until every other device "
        "following its graph applied it (record.applied); crosses along the top: writes "
        "never acknowledged (refused, superseded before they were pushed, or lost). "
    )
    return Figure("Write latency", caption + latencies(ops).sentence(), chart)


BUCKET_S = 10.0


def availability(story: Story) -> dict[str, list[tuple[float, float, int]]]:
    """Per device, per ``BUCKET_S`` of the run: the share (%) of the exchanges it
    started that got an answer other than 429 or 5xx, and how many it started."""
    counts: dict[str, dict[int, list[int]]] = {}
    for x in story.exchanges:
        ok = x.status is not None and x.status != 429 and x.status < 500
        bucket = counts.setdefault(x.device, {}).setdefault(int(x.start // BUCKET_S), [0, 0])
        bucket[0] += ok
        bucket[1] += 1
    return {
        device: [(b * BUCKET_S, 100 * ok / n, n) for b, (ok, n) in sorted(per.items())]
        for device, per in sorted(counts.items())
    }


def availability_figure(story: Story) -> Figure:
    """Per device, the share of requests answered, bucket by bucket; a bucket in which
    the device sent nothing is a gap, not a value."""
    frame = _frame(story, LINE_HEIGHT, (0.0, 100.0))
    parts = [*svg.x_axis(frame, TIME_AXIS), *svg.y_axis(frame, "% of requests answered")]
    legend = []
    per_device = availability(story)
    for i, (device, buckets) in enumerate(per_device.items()):
        colour, dash = svg.stroke(story.colour_index(device))
        for run in _runs(buckets):
            points = [(t, pct) for t, pct, _ in run] + [(run[-1][0] + BUCKET_S, run[-1][1])]
            text = f"{device}: " + ", ".join(f"{t:g} s {pct:.0f}% of {n}" for t, pct, n in run[:6])
            parts.append(
                svg.polyline(frame, points, colour, dash, True, text, _width(i, len(per_device)))
            )
        legend.append((device, colour, dash))
    if not per_device:
        parts.append(svg.message(frame, "No request was sent."))
    parts += svg.legend(frame, legend)
    chart = svg.document(
        "plot-availability", "plot-availability", "Availability: requests answered per device",
        frame, parts,
    )  # fmt: skip
    caption = (
        f"Per device and per {BUCKET_S:g} s: the share of the requests it sent that got an "
        "answer (any status but 429 and 5xx); timeouts and requests left unanswered by a crash "
        "count as unavailable. A gap: the device sent nothing then (down, or idle)."
    )
    return Figure("Availability", caption, chart)


def _runs(buckets: list[tuple[float, float, int]]) -> list[list[tuple[float, float, int]]]:
    """Consecutive buckets, split where one is missing."""
    runs: list[list[tuple[float, float, int]]] = []
    for bucket in buckets:
        if runs and abs(runs[-1][-1][0] + BUCKET_S - bucket[0]) < 1e-9:
            runs[-1].append(bucket)
        else:
            runs.append([bucket])
    return runs


def rejected_figure(story: Story) -> Figure:
    per_device = {
        device: [(0.0, 0), *((t, i) for i, t in enumerate(times, start=1)), (story.end, len(times))]
        for device, times in story.rejections.items()
    }
    chart = _line_chart(
        "plot-rejected",
        "plot-rejected",
        "Records rejected per device (cumulative)",
        story,
        _device_series(story, per_device),
        "records rejected",
        stairs=True,
        empty="No record was rejected.",
    )
    caption = (
        "How many records each device refused to apply (record.rejected), counted up over time."
    )
    return Figure("Rejected records", caption, chart)


def alarms_figure(story: Story) -> Figure:
    """Lanes: scheduled and world actions on top, then each device, then the relay;
    disruptions as shaded spans, alarms and rejections as markers on their device.
    Scheduled actions and alarms are named beside their marker where there is room."""
    rows = [TOP_ROW, *story.devices, RELAY]
    frame = _frame(story, ROW_HEIGHT * len(rows))
    centre = {row: frame.top + (i + 0.5) * ROW_HEIGHT for i, row in enumerate(rows)}
    parts = list(svg.x_axis(frame, TIME_AXIS))
    for row, y in centre.items():
        parts.append(svg.label(frame.left - 8, y + 4, row, "end"))
        edge = y + ROW_HEIGHT / 2
        parts.append(svg.line(frame.left, edge, frame.right, edge, class_="grid"))
    legend: dict[str, tuple[str, str]] = {}
    for s in story.spans:
        if s.row in centre:
            name = "adversary" if s.kind.startswith("adversary") else s.kind
            colour = SPAN_COLOURS.get(name, ADVERSARY_COLOUR)
            y = centre[s.row]
            tip = f"{s.row} {s.kind}: {s.start:.1f}-{s.end:.1f} s"
            parts.append(svg.band(frame, s.start, s.end, colour, y - 9, y + 9, tip))
            legend[name] = (colour, "band")
    labelled: dict[str, float] = {}  # row -> right end of its last label: labels never overlap
    for m in story.moments:
        if m.category == "crash":
            continue  # drawn as a "down" span
        shape, colour = MARKERS[m.category]
        row = m.actor if m.actor in centre and m.actor != RELAY else TOP_ROW
        x, y = frame.x(m.t), centre[row]
        parts.append(svg.marker(x, y, shape, colour, f"{m.t:.3f} s {m.actor} {m.what}: {m.detail}"))
        legend[m.category] = (colour, shape)
        named = row == TOP_ROW or m.category == "alarm"
        width = SMALL_CHAR_PX * len(m.what)
        anchor = "start" if x + 8 + width < frame.right else "end"
        left = x + 8 if anchor == "start" else x - 8 - width
        if named and left > labelled.get(row, -1e9) + 6:
            parts.append(
                svg.label(x + (8 if anchor == "start" else -8), y - 3, m.what, anchor, "small")
            )
            labelled[row] = left + width
    items = [(name, colour, swatch) for name, (colour, swatch) in sorted(legend.items())]
    parts += svg.legend(frame, items)
    chart = svg.document(
        "plot-alarms", "plot-alarms", "Alarms, rejections and faults over time", frame, parts
    )
    caption = (
        "Each row is a device (the relay at the bottom, scheduled and world actions on top). "
        "Shaded: partitioned, down, error windows, adversary modes and revoked devices (gone "
        "from the fleet on purpose). Diamonds: log alarms; triangles: rejected records; "
        "ticks: scheduled actions, setup and ceremonies. Hover for details."
    )
    return Figure("Alarms and faults", caption, chart)


MAX_ROUTES = 6


def requests_figure(story: Story) -> Figure:
    """Requests per route over time, as the devices sent them (counted up), so a
    change that polls or rechecks more shows its slope (docs/lab/performance.md, "What a
    run costs")."""
    per_route: dict[str, list[float]] = {}
    for x in story.exchanges:
        try:
            route = route_name(match(x.method, x.path)[0]).replace(" /graphs/:gid/", " …/")
        except Refused:
            route = "no route"
        per_route.setdefault(route, []).append(x.start)
    busiest = sorted(per_route, key=lambda r: (-len(per_route[r]), r))
    if len(busiest) > MAX_ROUTES:  # the legend has room for so many: the rest together
        rest = sorted(t for r in busiest[MAX_ROUTES - 1 :] for t in per_route.pop(r))
        busiest, per_route["other routes"] = [*busiest[: MAX_ROUTES - 1], "other routes"], rest
    series = [
        Series(route, *svg.stroke(i), [(0.0, 0), *((t, n) for n, t in enumerate(times, 1)),
                                       (story.end, len(times))])
        for i, (route, times) in enumerate((r, per_route[r]) for r in busiest)
    ]  # fmt: skip
    chart = _line_chart(
        "plot-requests", "plot-requests", "Requests per route (cumulative)", story, series,
        "requests", stairs=True, empty="No request was sent.",
    )  # fmt: skip
    caption = (
        "How many requests the devices sent on each route (…/ is /graphs/:gid/), counted "
        "up over virtual time, the busiest first (sent, not necessarily served: the Cost "
        "table counts what the relay served)."
    )
    return Figure("Requests per route", caption, chart)
