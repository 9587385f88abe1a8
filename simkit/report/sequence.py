"""The sequence diagram of the window that matters (``data.window``) and of what the
story cites elsewhere (a violation's evidence, a clean run's ceremonies and faults),
read once as rows that report.md draws with Mermaid and report.html draws as inline
SVG: requests and responses as arrows between a device and the relay, faults,
crashes, alarms and rejections as notes, in trace order, with the focus (the first
violation or alarm) highlighted and each stretch left out marked."""

import textwrap

import attrs

from simkit.report import svg
from simkit.report.data import RELAY, Story, describe, label, window


@attrs.frozen
class Row:
    """One line of the diagram: an arrow (``request``, ``response``) between ``who``
    and the relay, or a ``note`` over ``who`` (not a device: across the diagram)."""

    kind: str
    seq: int
    t: float
    who: str
    text: str
    failed: bool = False  # a response with status 400 or more
    highlight: bool = False

    @property
    def stamped(self) -> str:
        return f"[{self.t:.3f}] {self.text}"


def rows(story: Story) -> list[Row]:
    """The window's exchanges and moments, then what the story cites elsewhere (its
    exchanges whole, its other events as notes), in trace order; a note marks each
    stretch of the run left out."""
    chosen, lo, hi = window(story)
    cited = dict(story.cited)
    drawn = list(chosen)
    for x in story.exchanges:
        if x.seq in cited or x.end_seq in cited:
            drawn.append(x)
    by_seq = {x.seq: x for x in drawn}
    by_end = {x.end_seq: x for x in drawn if x.end_seq is not None}
    by_key = {(x.device, x.xid): x for x in chosen}
    moments = {m.seq: m for m in story.moments}
    focus = story.focus
    shown = set(range(lo, hi + 1)) | set(by_seq) | set(by_end) | set(cited)
    out: list[Row] = []
    before = None
    for seq in sorted(s for s in shown if 0 <= s < len(story.events)):
        e = story.events[seq]
        if before is not None and seq > before.seq + 1:
            left_out = sum(1 for x in story.exchanges if before.seq < x.seq < seq)
            if left_out:
                text = f"… {left_out} exchanges over {e.t - before.t:.1f} s not drawn"
                out.append(Row("note", seq, e.t, "*", text))
        before = e
        key = (e.fields.get("device", e.actor), e.fields.get("xid"))
        role = f"{cited[seq]}: " if seq in cited else ""
        if e.seq in by_seq:
            x = by_seq[e.seq]
            out.append(Row("request", e.seq, e.t, x.device, f"{role}{x.method} {x.path}"))
        elif e.kind == "response" and e.seq in by_end:
            x = by_end[e.seq]
            text = f"{role}{x.status}, {e.fields.get('size')} bytes"
            out.append(Row("response", e.seq, e.t, x.device, text, failed=x.status >= 400))
        elif e.kind == "fault" and key in by_key:
            x = by_key[key]
            out.append(Row("note", e.seq, e.t, x.device, f"{label(e)}: {x.method} {x.path}"))
        elif e.seq in moments:
            m = moments[e.seq]
            text = f"{m.category}: {m.what} {m.actor} {m.detail}"
            mark = e.seq == focus.seq and focus.kind != "violation"
            out.append(Row("note", e.seq, e.t, m.actor, text, highlight=mark))
        elif role and not (e.seq == focus.seq and focus.kind == "violation"):
            who = e.actor if e.actor in story.devices else "*"
            out.append(Row("note", e.seq, e.t, who, f"{role}{label(e)} {describe(e.fields)}"))
        if e.seq == focus.seq and focus.kind == "violation":
            text = f"{focus.text}: {focus.violation}"
            out.append(Row("note", e.seq, e.t, "*", text, highlight=True))
    return out


def participants(story: Story, diagram: list[Row]) -> list[str]:
    """The relay, then every device the rows are about, sorted."""
    return [RELAY, *sorted({r.who for r in diagram if r.who in story.devices})]


# -- report.html: the same rows as SVG ----------------------------------------------------------

ROW_PX, LINE_PX, HEAD_PX, TIME_PX = 22, 14, 44, 84
NOTE_CHARS = 120


def _note_lines(row: Row) -> list[str]:
    lines = textwrap.wrap(row.stamped, NOTE_CHARS, break_long_words=True) or [""]
    return lines[:2] if len(lines) <= 2 else [lines[0], lines[1][: NOTE_CHARS - 1] + "…"]


def sequence_svg(story: Story, caption: str) -> str:
    """An inline ``<svg id="sequence">``: lifelines, arrows and notes, one row each,
    virtual time on the left; hover a row for its full text."""
    diagram = rows(story)
    names = participants(story, diagram)
    left, right = TIME_PX, svg.WIDTH - 16
    step = (right - left) / len(names)
    x = {name: left + step * (i + 0.5) for i, name in enumerate(names)}
    heights = [
        ROW_PX + (LINE_PX * (len(_note_lines(r)) - 1) if r.kind == "note" else 0) for r in diagram
    ]
    height = HEAD_PX + sum(heights) + 16
    parts = [svg.tip(caption)]
    for name in names:
        parts.append(
            svg.element(
                "rect",
                x=x[name] - 44,
                y=6.0,
                width=88.0,
                height=24.0,
                fill="#eef3f8",
                stroke="#555555",
            )
        )
        parts.append(svg.label(x[name], 22, name, "middle", "axis-title"))
        parts.append(
            svg.line(x[name], 30.0, x[name], height - 8.0, stroke="#999999", stroke_dasharray="4 3")
        )
    y = float(HEAD_PX)
    for row, h in zip(diagram, heights, strict=True):
        parts.append(_row(row, y, h, x, left, right))
        y += h
    return svg.element(
        "svg",
        "\n".join(["", *parts, ""]),
        id="sequence",
        class_="sequence",
        width=svg.WIDTH,
        height=float(height),
        viewBox=f"0 0 {svg.WIDTH} {svg.n(height)}",
        role="img",
    )


def _row(row: Row, y: float, h: float, x: dict[str, float], left: float, right: float) -> str:
    parts = [svg.tip(f"trace#{row.seq} {row.who}: {row.stamped}")]
    if row.highlight:
        parts.append(svg.element("rect", x=4.0, y=y, width=right - 4, height=h, fill="#ffe0e0"))
    parts.append(svg.label(left - 8, y + 15, f"{row.t:.3f}", "end", "small"))
    if row.kind == "note":
        parts.append(
            svg.element(
                "rect",
                x=left,
                y=y + 2,
                width=right - left,
                height=h - 4,
                fill="#fff8d6",
                stroke="#c8b560",
            )
        )
        who = "" if row.who == "*" else f"{row.who}: "
        for i, text in enumerate(_note_lines(attrs.evolve(row, text=who + row.text))):
            parts.append(svg.label(left + 8, y + 15 + i * LINE_PX, text, "start", "small"))
        return svg.element("g", "".join(parts), class_="note")
    start, end = (x[row.who], x[RELAY]) if row.kind == "request" else (x[RELAY], x[row.who])
    colour = "#b00020" if row.failed else "#1f4e79"
    mid = y + 14
    parts.append(
        svg.line(
            start,
            mid,
            end,
            mid,
            stroke=colour,
            stroke_width=1.5,
            stroke_dasharray="5 3" if row.kind == "response" else "",
        )
    )
    tip = 7.0 if end > start else -7.0
    head = "×" if row.failed else ""
    parts.append(
        svg.element("path", d=f"M{svg.n(end)},{svg.n(mid)} l{svg.n(-tip)},-4 v8 Z", fill=colour)
    )
    parts.append(
        svg.label(
            (start + end) / 2, mid - 4, row.text + (f" {head}" if head else ""), "middle", "small"
        )
    )
    return svg.element("g", "".join(parts), class_=row.kind)
