"""Just enough hand-written SVG for the report's plots: a frame mapping data to
pixels, axes with ticks, lines, bands, markers and a legend. Coordinates are
printed with at most two decimals so the same data gives the same bytes."""

import itertools
import math
from html import escape

import attrs

WIDTH = 960
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 96, 24, 40, 48
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000")
"""Okabe-Ito colours, told apart with the common colour-vision deficiencies."""
DASHES = ("", "6 3", "2 3")
CHAR_PX = 7  # an estimate of one character's width at the 12 px font, for the legend


def n(v: float) -> str:
    """A coordinate or opacity: at most two decimals, no trailing zeros."""
    return f"{v:.2f}".rstrip("0").rstrip(".")


def num(v: float) -> str:
    """A tick label: as few digits as it needs."""
    return f"{v:.3f}".rstrip("0").rstrip(".")


def stroke(i: int) -> tuple[str, str]:
    """(colour, dash pattern) of series ``i``; the dash changes once the colours run out."""
    return PALETTE[i % len(PALETTE)], DASHES[(i // len(PALETTE)) % len(DASHES)]


def step(lo: float, hi: float, count: int = 6, least: float = 0.0) -> float:
    """A 1, 2 or 5 times a power of ten giving about ``count`` ticks over [lo, hi]
    (and at least ``least``: counts get whole-number ticks)."""
    raw = max(hi - lo, 1e-9) / count
    mag = 10 ** math.floor(math.log10(raw))
    return max(least, next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw))


def ticks(lo: float, hi: float, count: int = 6, least: float = 0.0) -> list[float]:
    size = step(lo, hi, count, least)
    first = math.ceil(lo / size - 1e-9)
    return [round(i * size, 9) for i in range(first, math.floor(hi / size + 1e-9) + 1)]


def nice_top(v: float, count: int = 5) -> float:
    """A count axis's top: at or above ``v`` (and 1), on a whole-number tick."""
    v = max(v, 1)
    size = step(0, v, count, least=1)
    return math.ceil(v / size - 1e-9) * size


@attrs.frozen
class Frame:
    """The plot area of a chart in pixels, and the data ranges it shows."""

    left: float
    top: float
    width: float
    height: float
    x_range: tuple[float, float]
    y_range: tuple[float, float] = (0.0, 1.0)
    log_y: bool = False  # y_range then holds powers of ten (0.01, 100)

    @classmethod
    def below_legend(cls, height: float, x_range, y_range=(0.0, 1.0), log_y=False) -> "Frame":
        width = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
        return cls(MARGIN_LEFT, MARGIN_TOP, width, height, x_range, y_range, log_y)

    @property
    def bottom(self) -> float:
        return self.top + self.height

    @property
    def right(self) -> float:
        return self.left + self.width

    @property
    def svg_height(self) -> float:
        return self.bottom + MARGIN_BOTTOM

    def x(self, v: float) -> float:
        lo, hi = self.x_range
        return self.left + (v - lo) / ((hi - lo) or 1) * self.width

    def y(self, v: float) -> float:
        lo, hi = self.y_range
        if self.log_y:
            v = math.log10(min(max(v, lo), hi))
            lo, hi = math.log10(lo), math.log10(hi)
        return self.bottom - (v - lo) / ((hi - lo) or 1) * self.height


def element(name: str, body: str = "", /, **attributes: object) -> str:
    """``<name a="v" ...>body</name>``; numbers printed with ``n``, ``class_`` and
    ``stroke_width`` written ``class`` and ``stroke-width``, empty values left out."""
    pairs = [
        f'{key.rstrip("_").replace("_", "-")}="{n(v) if isinstance(v, float) else escape(str(v))}"'
        for key, v in attributes.items()
        if v != ""
    ]
    head = " ".join([name, *pairs])
    return f"<{head}>{body}</{name}>" if body else f"<{head}/>"


def tip(text: str) -> str:
    """A hover tip (an SVG ``<title>`` child)."""
    return element("title", escape(text))


def document(ident: str, kind: str, title: str, frame: Frame, parts: list[str]) -> str:
    """An inline ``<svg>`` (no xmlns: it lives in HTML) with a title, its own id and
    its kind of plot as a class, for people and tests to find it by."""
    h = frame.svg_height
    body = "\n".join(["", tip(title), *parts, ""])
    return element(
        "svg",
        body,
        id=ident,
        class_=f"plot {kind}",
        width=WIDTH,
        height=h,
        viewBox=f"0 0 {WIDTH} {n(h)}",
        role="img",
    )


def label(x: float, y: float, value: str, anchor: str = "start", css: str = "") -> str:
    return element("text", escape(value), x=x, y=y, text_anchor=anchor, class_=css)


def line(x1: float, y1: float, x2: float, y2: float, body: str = "", **style: object) -> str:
    return element("line", body, x1=x1, y1=y1, x2=x2, y2=y2, **style)


def x_axis(frame: Frame, title: str) -> list[str]:
    """Vertical grid lines, tick labels and the axis title along the bottom."""
    parts = []
    for v in ticks(*frame.x_range, count=10):
        x = frame.x(v)
        parts.append(line(x, frame.top, x, frame.bottom, class_="grid"))
        parts.append(label(x, frame.bottom + 16, num(v), "middle"))
    parts.append(line(frame.left, frame.bottom, frame.right, frame.bottom, class_="axis"))
    parts.append(
        label(frame.left + frame.width / 2, frame.bottom + 36, title, "middle", "axis-title")
    )
    return parts


def y_axis(frame: Frame, title: str) -> list[str]:
    """Horizontal grid lines, tick labels (whole numbers: a linear y axis counts
    something; powers of ten on a log axis) and the rotated axis title on the left."""
    parts = []
    if frame.log_y:
        lo, hi = (round(math.log10(v)) for v in frame.y_range)
        values = [10.0**p for p in range(lo, hi + 1)]
    else:
        values = ticks(*frame.y_range, count=5, least=1)
    for v in values:
        y = frame.y(v)
        parts.append(line(frame.left, y, frame.right, y, class_="grid"))
        parts.append(label(frame.left - 6, y + 4, num(v), "end"))
    parts.append(line(frame.left, frame.top, frame.left, frame.bottom, class_="axis"))
    cx, cy = frame.left - 44, frame.top + frame.height / 2
    parts.append(
        element(
            "text",
            escape(title),
            class_="axis-title",
            x=cx,
            y=cy,
            text_anchor="middle",
            transform=f"rotate(-90 {n(cx)} {n(cy)})",
        )
    )
    return parts


def polyline(
    frame: Frame,
    points: list[tuple[float, float]],
    colour: str,
    dash: str = "",
    stairs: bool = False,
    text: str = "",
    width: float = 2.0,
) -> str:
    """A data line with a hover tip: samples joined and dotted, or (``stairs``) a
    count held until its next change."""
    dots = []
    if stairs:
        points = [p for a, b in itertools.pairwise(points) for p in (a, (b[0], a[1]))] + points[-1:]
    else:
        dots = [
            element("circle", cx=frame.x(x), cy=frame.y(y), r=2.5, fill=colour) for x, y in points
        ]
    coords = " ".join(f"{n(frame.x(x))},{n(frame.y(y))}" for x, y in points)
    drawn = element(
        "polyline",
        points=coords,
        fill="none",
        stroke=colour,
        stroke_width=width,
        stroke_dasharray=dash,
    )
    return element("g", "".join([tip(text), drawn, *dots]))


def band(
    frame: Frame,
    start: float,
    end: float,
    colour: str,
    top: float,
    bottom: float,
    text: str,
    opacity: float = 0.35,
) -> str:
    """A shaded stretch of time between two pixel heights (at least a sliver wide)."""
    x0, x1 = frame.x(start), frame.x(end)
    return element(
        "rect",
        tip(text),
        x=x0,
        y=top,
        width=max(x1 - x0, 1.5),
        height=bottom - top,
        fill=colour,
        fill_opacity=opacity,
    )


def vline(frame: Frame, t: float, colour: str, dash: str, text: str) -> str:
    x = frame.x(t)
    return line(
        x,
        frame.top,
        x,
        frame.bottom,
        tip(text),
        stroke=colour,
        stroke_width=2.0,
        stroke_dasharray=dash,
    )


def scatter(
    frame: Frame, points: list[tuple[float, float, str]], colour: str, hollow: bool = False
) -> str:
    """Dots (``x``, ``y``, hover text), filled or as rings."""
    fill = "none" if hollow else colour
    dots = [
        element(
            "circle",
            tip(text),
            cx=frame.x(x),
            cy=frame.y(y),
            r=3.0,
            fill=fill,
            stroke=colour,
            stroke_width=1.2,
        )
        for x, y, text in points
    ]
    return element("g", "".join(dots))


SHAPES = {
    "diamond": "M0,-7 L7,0 L0,7 L-7,0 Z",
    "triangle": "M0,-6 L6,5 L-6,5 Z",
    "tick": "M-1.5,-8 L1.5,-8 L1.5,8 L-1.5,8 Z",
    "cross": "M-5,-3.5 L-3.5,-5 L0,-1.5 L3.5,-5 L5,-3.5 L1.5,0 L5,3.5 L3.5,5 L0,1.5 L-3.5,5 "
    "L-5,3.5 L-1.5,0 Z",
    "dot": "M-3,0 A3,3 0 1,0 3,0 A3,3 0 1,0 -3,0 Z",
    "ring": "M-4,0 A4,4 0 1,0 4,0 A4,4 0 1,0 -4,0 Z M-2.5,0 A2.5,2.5 0 1,1 2.5,0 "
    "A2.5,2.5 0 1,1 -2.5,0 Z",
}


def marker(x: float, y: float, shape: str, colour: str, text: str) -> str:
    return element(
        "path",
        tip(text),
        transform=f"translate({n(x)} {n(y)})",
        d=SHAPES[shape],
        fill=colour,
        stroke="#ffffff",
        stroke_width=1.0,
    )


def legend(frame: Frame, items: list[tuple[str, str, str]]) -> list[str]:
    """One row above the plot area: (label, colour, swatch) where the swatch is a
    dash pattern for lines, ``band`` for shading, or a marker shape."""
    parts, x, y = [], frame.left, frame.top - 16
    for text, colour, swatch in items:
        if swatch == "band":
            parts.append(
                element(
                    "rect", x=x, y=y - 6, width=20.0, height=12.0, fill=colour, fill_opacity=0.35
                )
            )
        elif swatch in SHAPES:
            parts.append(marker(x + 10, y, swatch, colour, text))
        else:
            parts.append(
                line(x, y, x + 20, y, stroke=colour, stroke_width=3.0, stroke_dasharray=swatch)
            )
        parts.append(label(x + 26, y + 4, text))
        x += 26 + CHAR_PX * len(text) + 18
    return parts


def message(frame: Frame, text: str) -> str:
    """A line of text in the middle of an empty plot, saying why it is empty."""
    return label(
        frame.left + frame.width / 2, frame.top + frame.height / 2, text, "middle", "empty"
    )
