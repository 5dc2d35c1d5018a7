"""SVG drawing primitives for the page's figures, written as text: no plotting library.

A figure is a :class:`Canvas` ``WIDTH`` user units wide whose height grows with what is
drawn; it is written with a ``viewBox`` and no pixel width or height, so the page's CSS
scales it to the width of its box (text included: ``FONT`` units at the page's narrowest
figure box stay at least 9 px tall). On it, :class:`Plot` frames draw line, step, bar and
span series from plain lists of floats through a :class:`Scale` (linear or log, with round
ticks); :func:`legend` and :func:`wrap` lay out text by an estimate of its width.

Determinism: the same input gives the same bytes (coordinates rounded to 0.01 unit, ids
prefixed with the figure's key, hatch patterns named by what they draw). Accessibility: the
``<svg>`` carries ``role="img"`` and ``aria-labelledby`` pointing at its ``<title>`` and
``<desc>``, and every label is real ``<text>`` (searchable, copyable, read by a screen reader
through the description).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

# Okabe & Ito's colour-blind safe palette (plus a neutral grey).
ORANGE = "#E69F00"
SKY = "#56B4E9"
GREEN = "#009E73"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"
BLACK = "#000000"
GREY = "#999999"
LIGHT_GREY = "#DDDDDD"
GRID = "#E6E6E6"
INK = "#1A1A1A"

WIDTH = 500.0
"""Width of every figure in user units (its ``viewBox``); the page scales it to its box."""
FONT = 13.0
"""Smallest text any figure draws (ticks, legends, annotations), in user units.

The page's figure box is about 353 CSS px wide on a 400 px screen: 13 units of 500 are 9.2 px there."""
LABEL_FONT = 14.0
"""Axis labels and panel titles."""
TITLE_FONT = 15.0
"""A figure's title."""
CHAR_EM = 0.6
"""Estimated advance of one character in ems (a generous average for sans-serif text): lays out labels and legends."""
FONT_FAMILY = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"

DASHES: dict[str, str | None] = {"-": None, "": None, "--": "6 3", "-.": "7 3 1.5 3", ":": "1.5 2.5"}
"""Line style (matplotlib's spelling) -> SVG ``stroke-dasharray``."""


def num(value: float) -> str:
    """A coordinate as short text: rounded to 0.01 unit, no trailing zeros, never ``-0``."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def text_width(text: str, size: float = FONT) -> float:
    """Estimated width of ``text`` at ``size`` (user units)."""
    return len(text) * size * CHAR_EM


def wrap(text: str, width: float, size: float = FONT) -> list[str]:
    """Split ``text`` into lines no wider than ``width`` (estimated), at spaces; a word longer than a line is cut."""
    per_line = max(1, int(width / (size * CHAR_EM)))
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            while len(word) > per_line:
                if line:
                    lines.append(line)
                    line = ""
                lines.append(word[:per_line])
                word = word[per_line:]
            candidate = f"{line} {word}" if line else word
            if len(candidate) <= per_line:
                line = candidate
            else:
                lines.append(line)
                line = word
        lines.append(line)
    return lines


def fmt_tick(value: float, step: float) -> str:
    """A tick label with as many decimals as the tick step needs (0.25 steps: two)."""
    if value == 0:
        return "0"
    if abs(value) >= 1e5 or abs(value) < 1e-4:
        return f"{value:.3g}"
    decimals = next((d for d in range(10) if abs(round(step, d) - step) <= 1e-9 * abs(step)), 10) if step > 0 else 0
    return f"{value:.{decimals}f}"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2, 2.5 or 5 times a power of ten) covering ``lo``..``hi``, about ``count`` of them."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, count)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= raw)
    first = math.ceil(lo / step - 1e-9)
    last = math.floor(hi / step + 1e-9)
    return [round(i * step, 12) for i in range(first, last + 1)]


@dataclass(frozen=True)
class Scale:
    """Data ``lo``..``hi`` onto ``start``..``end`` (user units; ``end`` < ``start`` for a y axis), linear or log10."""

    lo: float
    hi: float
    start: float
    end: float
    log: bool = False

    def __call__(self, value: float) -> float:
        """The coordinate of ``value``."""
        if self.log:
            lo, hi, v = math.log10(self.lo), math.log10(self.hi), math.log10(max(value, self.lo * 1e-3))
        else:
            lo, hi, v = self.lo, self.hi, value
        span = hi - lo if hi != lo else 1.0
        return self.start + (v - lo) / span * (self.end - self.start)

    def ticks(self, count: int | None = None) -> list[tuple[float, str]]:
        """Tick values inside the domain with their labels; ``count`` defaults to one per 70 units of axis."""
        n = count if count is not None else max(2, int(abs(self.end - self.start) / 70))
        if self.log:
            first, last = math.floor(math.log10(self.lo)), math.ceil(math.log10(self.hi))
            values = [10.0**e for e in range(first, last + 1) if self.lo <= 10.0**e <= self.hi]
            return [(v, f"{v:g}") for v in values]
        values = nice_ticks(self.lo, self.hi, n)
        step = values[1] - values[0] if len(values) > 1 else abs(values[0]) or 1.0
        return [(v, fmt_tick(v, step)) for v in values]


def padded(values: Sequence[float], pad: float = 0.05, *, zero: bool = False) -> tuple[float, float]:
    """A domain around ``values`` with ``pad`` of its span on each side (from 0 when ``zero``); never empty."""
    lo, hi = (min(0.0, *values) if zero else min(values)), max(values)
    span = hi - lo
    if span <= 0:
        span = abs(hi) or 1.0
    return (lo if zero else lo - pad * span), hi + pad * span


HATCH_PATHS: dict[str, str] = {
    "//": "M-1,1 l2,-2 M0,8 l8,-8 M7,9 l2,-2",
    "\\\\": "M-1,7 l2,2 M0,0 l8,8 M7,-1 l2,2",
    "xx": "M0,0 l8,8 M0,8 l8,-8",
    "..": "M2,2 h0.01 M6,6 h0.01",
}
"""Hatch name (matplotlib's spelling) -> path on an 8 x 8 tile."""


@dataclass
class Canvas:
    """One figure: SVG elements in drawing order, the hatch patterns they use, and the height drawn so far."""

    key: str
    width: float = WIDTH
    height: float = 0.0
    parts: list[str] = field(default_factory=list)
    defs: dict[str, str] = field(default_factory=dict)

    def fill(self, colour: str, hatch: str = "", hatch_colour: str = BLACK) -> str:
        """A ``fill`` value: the colour, or a hatch pattern over it (defined once per colour, hatch and line colour)."""
        if not hatch:
            return colour
        name = f"{self.key}-hatch-{HATCH_NAMES[hatch]}-{colour.lstrip('#')}-{hatch_colour.lstrip('#')}".lower()
        if name not in self.defs:
            dots = hatch == ".."
            cap = ' stroke-linecap="round"' if dots else ""
            self.defs[name] = (
                f'<pattern id="{name}" patternUnits="userSpaceOnUse" width="8" height="8">'
                f'<rect width="8" height="8" fill="{colour}"/>'
                f'<path d="{HATCH_PATHS[hatch]}" stroke="{hatch_colour}" stroke-width="{2.2 if dots else 0.9}"'
                f"{cap}/></pattern>"
            )
        return f"url(#{name})"

    def text(self, x: float, y: float, content: str, *, size: float = FONT, anchor: str = "start", weight: str = "",
             colour: str = INK, rotate: bool = False, cls: str = "") -> None:
        """Text with its baseline at ``y`` (``anchor``: start, middle, end); ``rotate`` turns it to read bottom-up."""
        attrs = f'x="{num(x)}" y="{num(y)}" font-size="{num(size)}"'
        if anchor != "start":
            attrs += f' text-anchor="{anchor}"'
        if weight:
            attrs += f' font-weight="{weight}"'
        if colour != INK:
            attrs += f' fill="{colour}"'
        if rotate:
            attrs += f' transform="rotate(-90 {num(x)} {num(y)})"'
        if cls:
            attrs += f' class="{cls}"'
        self.parts.append(f"<text {attrs}>{escape(content, quote=False)}</text>")

    def line(self, x1: float, y1: float, x2: float, y2: float, *, colour: str = INK, width: float = 1.0, style: str = "-") -> None:
        """A straight line in a matplotlib line style (``-``, ``--``, ``-.``, ``:``)."""
        self.parts.append(f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" stroke="{colour}"'
                          f' stroke-width="{num(width)}"{_dash(style)}/>')

    def path(self, d: str, *, colour: str = "none", fill: str = "none", width: float = 1.0, style: str = "-", cls: str = "") -> None:
        """A path: ``d`` in SVG path syntax, stroked and/or filled."""
        stroke = f' stroke="{colour}" stroke-width="{num(width)}"{_dash(style)}' if colour != "none" else ""
        extra = f' class="{cls}"' if cls else ""
        self.parts.append(f'<path d="{d}" fill="{fill}"{stroke}{extra}/>')

    def rect(self, x: float, y: float, w: float, h: float, *, fill: str, edge: str = "none", edge_width: float = 0.6) -> None:
        """A rectangle from its top-left corner (negative sizes are turned around)."""
        if w < 0:
            x, w = x + w, -w
        if h < 0:
            y, h = y + h, -h
        stroke = f' stroke="{edge}" stroke-width="{num(edge_width)}"' if edge != "none" else ""
        self.parts.append(f'<rect x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}" fill="{fill}"{stroke}/>')

    def marker(self, x: float, y: float, shape: str, *, colour: str, size: float = 8.0, face: str | None = None,
               width: float = 1.3) -> None:
        """A marker centred on (x, y), ``size`` units across; ``face`` None fills it with ``colour``, ``"none"`` leaves it open."""
        fill = colour if face is None else face
        r = size / 2
        style = f'fill="{fill}" stroke="{colour}" stroke-width="{num(width)}"'
        if shape == "o":
            self.parts.append(f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(r)}" {style}/>')
            return
        self.parts.append(f'<path d="{_marker_path(shape, x, y, r)}" {style}/>')

    def svg(self, title: str, desc: str) -> str:
        """The finished ``<svg>`` element: viewBox, title and description for assistive technology, hatch patterns, drawing."""
        key = self.key
        defs = f"<defs>{''.join(self.defs[k] for k in sorted(self.defs))}</defs>" if self.defs else ""
        return (
            f'<svg id="{key}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {num(self.width)} {num(math.ceil(self.height))}" '
            f'role="img" aria-labelledby="{key}-title {key}-desc" font-family="{FONT_FAMILY}">'
            f'<title id="{key}-title">{escape(title, quote=False)}</title><desc id="{key}-desc">{escape(desc, quote=False)}</desc>'
            + defs + "".join(self.parts) + "</svg>\n"
        )


HATCH_NAMES = {"//": "fwd", "\\\\": "back", "xx": "cross", "..": "dots"}


def _dash(style: str) -> str:
    dash = DASHES.get(style)
    return f' stroke-dasharray="{dash}"' if dash else ""


def _polygon(points: Sequence[tuple[float, float]]) -> str:
    return "M" + " L".join(f"{num(px)},{num(py)}" for px, py in points) + " Z"


def _marker_path(shape: str, x: float, y: float, r: float) -> str:
    """The outline of a marker (matplotlib's names: s ^ v D P X *; anything else a circle's octagon)."""
    if shape == "s":
        r *= 0.9
        return _polygon([(x - r, y - r), (x + r, y - r), (x + r, y + r), (x - r, y + r)])
    if shape == "^":
        return _polygon([(x, y - r * 1.15), (x + r, y + r * 0.75), (x - r, y + r * 0.75)])
    if shape == "v":
        return _polygon([(x, y + r * 1.15), (x + r, y - r * 0.75), (x - r, y - r * 0.75)])
    if shape == "D":
        return _polygon([(x, y - r), (x + r * 0.8, y), (x, y + r), (x - r * 0.8, y)])
    if shape in ("P", "X"):
        t = r * 0.36
        arm = [(-t, -r), (t, -r), (t, -t), (r, -t), (r, t), (t, t), (t, r), (-t, r), (-t, t), (-r, t), (-r, -t), (-t, -t)]
        if shape == "X":
            c = math.sqrt(0.5)
            arm = [((dx - dy) * c, (dx + dy) * c) for dx, dy in arm]
        return _polygon([(x + dx, y + dy) for dx, dy in arm])
    if shape == "*":
        star = []
        for i in range(10):
            angle = math.pi / 2 + i * math.pi / 5
            radius = r * 1.15 if i % 2 == 0 else r * 0.47
            star.append((x + radius * math.cos(angle), y - radius * math.sin(angle)))
        return _polygon(star)
    return _polygon([(x + r * math.cos(k * math.pi / 4), y + r * math.sin(k * math.pi / 4)) for k in range(8)])


@dataclass(frozen=True)
class Plot:
    """A plot area on a canvas: ``left``, ``top``, ``width``, ``height`` in user units, with its x and y scales."""

    canvas: Canvas
    left: float
    top: float
    width: float
    height: float
    x: Scale
    y: Scale

    @property
    def right(self) -> float:
        """The right edge."""
        return self.left + self.width

    @property
    def bottom(self) -> float:
        """The bottom edge."""
        return self.top + self.height

    def y_ticks(self) -> list[tuple[float, str]]:
        """The y ticks (one per 45 units of height): the tick labels and the grid lines share them."""
        return self.y.ticks(max(2, int(self.height / 45)))

    def grid(self, *, x: bool = True, y: bool = True) -> None:
        """Light grid lines at the ticks (drawn first: below the data)."""
        c = self.canvas
        if x:
            for value, _ in self.x.ticks():
                c.line(self.x(value), self.top, self.x(value), self.bottom, colour=GRID, width=0.7)
        if y:
            for value, _ in self.y_ticks():
                c.line(self.left, self.y(value), self.right, self.y(value), colour=GRID, width=0.7)

    def x_axis(self, label: str | None = None, *, ticks: bool = True) -> float:
        """The bottom spine, tick labels below it and ``label`` under them; returns the y below what was drawn."""
        c = self.canvas
        c.line(self.left, self.bottom, self.right, self.bottom, colour=INK, width=0.8)
        y = self.bottom
        if ticks:
            for value, text in self.x.ticks():
                px = self.x(value)
                c.line(px, self.bottom, px, self.bottom + 4, colour=INK, width=0.8)
                c.text(px, self.bottom + 4 + FONT, text, anchor="middle")
            y += 4 + FONT + 3
        if label:
            for line in wrap(label, self.width, LABEL_FONT):
                y += LABEL_FONT + 2
                c.text(self.left + self.width / 2, y, line, size=LABEL_FONT, anchor="middle")
        return y + 4

    def y_axis(self) -> None:
        """The left spine and the tick labels left of it (the axis title goes above the plot: :func:`axis_title`)."""
        c = self.canvas
        c.line(self.left, self.top, self.left, self.bottom, colour=INK, width=0.8)
        for value, text in self.y_ticks():
            py = self.y(value)
            c.line(self.left - 4, py, self.left, py, colour=INK, width=0.8)
            c.text(self.left - 6, py + FONT * 0.35, text, anchor="end")

    def step(self, xs: Sequence[float], ys: Sequence[float], *, colour: str, style: str = "-", width: float = 1.6,
             cls: str = "series") -> None:
        """A step line through the points, holding each y until the next x (matplotlib's ``where="post"``)."""
        d = f"M{num(self.x(xs[0]))},{num(self.y(ys[0]))}"
        for i in range(1, len(xs)):
            d += f" H{num(self.x(xs[i]))} V{num(self.y(ys[i]))}"
        self.canvas.path(d, colour=colour, width=width, style=style, cls=cls)

    def polyline(self, xs: Sequence[float], ys: Sequence[float], *, colour: str, style: str = "-", width: float = 1.6,
                 cls: str = "series") -> None:
        """A line through the points in order."""
        d = "M" + " L".join(f"{num(self.x(a))},{num(self.y(b))}" for a, b in zip(xs, ys, strict=True))
        self.canvas.path(d, colour=colour, width=width, style=style, cls=cls)

    def vline(self, value: float, *, colour: str = BLACK, style: str = ":", width: float = 1.3) -> None:
        """A vertical line across the plot at x = ``value``."""
        self.canvas.line(self.x(value), self.top, self.x(value), self.bottom, colour=colour, width=width, style=style)

    def hline(self, value: float, *, colour: str = BLACK, style: str = ":", width: float = 1.0) -> None:
        """A horizontal line across the plot at y = ``value``."""
        self.canvas.line(self.left, self.y(value), self.right, self.y(value), colour=colour, width=width, style=style)

    def hbar(self, y: float, height: float, left: float, length: float, *, fill: str, edge: str = "none") -> None:
        """A horizontal bar from data x ``left`` over ``length``, between canvas y ``y`` and ``y + height``."""
        x0, x1 = self.x(left), self.x(left + length)
        self.canvas.rect(x0, y, x1 - x0, height, fill=fill, edge=edge)

    def vbar(self, x: float, width: float, value: float, *, fill: str, edge: str = "none") -> None:
        """A vertical bar from 0 up to data y ``value``, between canvas x ``x`` and ``x + width``."""
        y0, y1 = self.y(0.0), self.y(value)
        self.canvas.rect(x, y1, width, y0 - y1, fill=fill, edge=edge)

    def spans(self, spans: Sequence[tuple[float, float]], y: float, height: float, *, fill: str, edge: str = "none") -> None:
        """Many (start, length) spans on one lane as one path (matplotlib's ``broken_barh``)."""
        if not spans:
            return
        h = num(height)
        d = " ".join(f"M{num(self.x(s))},{num(y)} h{num(max(self.x(s + w) - self.x(s), 0.3))} v{h} H{num(self.x(s))} Z"
                     for s, w in spans)
        stroke = f' stroke="{edge}" stroke-width="0.3"' if edge != "none" else ""
        self.canvas.parts.append(f'<path d="{d}" fill="{fill}"{stroke}/>')


    def error_bar(self, x: float, y: float, low: float | None, high: float | None, *, colour: str) -> None:
        """A vertical interval from ``low`` to ``high`` at data x, with caps (an end not given is the point itself)."""
        lo, hi = low if low is not None else y, high if high is not None else y
        if lo == hi:
            return
        px = self.x(x)
        self.canvas.line(px, self.y(lo), px, self.y(hi), colour=colour, width=1.3)
        for end in (lo, hi):
            self.canvas.line(px - 5, self.y(end), px + 5, self.y(end), colour=colour, width=1.3)


def side_note(canvas: Canvas, x: float, y: float, content: str, *, right: float, colour: str = INK) -> None:
    """A note starting just right of x, or ending just left of it when it would run past ``right``."""
    if x + 3 + text_width(content) <= right:
        canvas.text(x + 3, y, content, colour=colour)
    else:
        canvas.text(x - 3, y, content, anchor="end", colour=colour)


@dataclass(frozen=True)
class Key:
    """One legend entry: a line swatch (``line`` style), a box (``fill``, hatch) or a marker."""

    label: str
    colour: str
    line: str | None = None
    hatch: str = ""
    marker: str | None = None
    face: str | None = None
    edge: str = "none"
    hatch_colour: str = BLACK


def legend(canvas: Canvas, keys: Sequence[Key], top: float, *, left: float = 4.0, width: float | None = None) -> float:
    """Legend entries flowed left to right, wrapping at ``width``; returns the y below the last row."""
    if not keys:
        return top
    right = left + (width if width is not None else canvas.width - left - 4)
    x, y = left, top + FONT
    for k in keys:
        lines = wrap(k.label, right - left - 26)
        span = 26 + max(text_width(line) for line in lines) + 12
        if x > left and x + span > right:
            x, y = left, y + FONT + 6
        mid = y - FONT * 0.35
        if k.marker is not None:
            canvas.marker(x + 10, mid, k.marker, colour=k.colour, face=k.face, size=8)
        elif k.line is not None:
            canvas.line(x, mid, x + 20, mid, colour=k.colour, width=1.8, style=k.line)
        else:
            canvas.rect(x, mid - 5, 20, 10, fill=canvas.fill(k.colour, k.hatch, k.hatch_colour), edge=k.edge)
        for i, line in enumerate(lines):
            canvas.text(x + 26, y + i * (FONT + 3), line)
        y += (len(lines) - 1) * (FONT + 3)
        x += span
    return y + 8


def axis_title(canvas: Canvas, text: str, top: float, *, left: float = 4.0) -> float:
    """A y axis's title, written above its plot (it reads at any width, unlike a rotated one); returns the y below it."""
    y = top
    for line in wrap(text, canvas.width - 2 * left, LABEL_FONT):
        y += LABEL_FONT + 3
        canvas.text(left, y, line, size=LABEL_FONT)
    return y + 4


def title(canvas: Canvas, text: str, top: float, *, left: float = 4.0, size: float = TITLE_FONT) -> float:
    """A bold title (wrapped to the canvas width); returns the y below it."""
    y = top
    for line in wrap(text, canvas.width - 2 * left, size):
        y += size + 3
        canvas.text(left, y, line, size=size, weight="bold")
    return y + 6
