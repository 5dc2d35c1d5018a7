"""Matplotlib to inline SVG, byte for byte the same for the same input.

Every figure is drawn on a fresh ``matplotlib.figure.Figure`` with an Agg canvas
attached (no pyplot, no global backend switch) inside an ``rc_context`` that starts
from matplotlib's defaults, so a user's ``matplotlibrc`` cannot change the output.
Determinism: ``svg.hashsalt`` is fixed (clip-path and marker ids), no date or
creator metadata, glyphs are written as paths of the DejaVu Sans font matplotlib
ships (the page looks the same on every machine and prints crisp). The SVG is then
made fit for inlining: the XML prologue and metadata go, every id gets the
figure's key as prefix (several figures share one HTML document), and a
``<title>``/``<desc>`` pair with ``role="img"`` and ``aria-labelledby`` gives it
alt text. matplotlib is imported only here, when a page is rendered.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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

MIN_FONT_PT = 7.5
"""Smallest text any figure draws (ticks, legends, annotations): readable at the page's narrowest figure width."""

RC: dict[str, Any] = {
    "svg.hashsalt": "sparsedebug",
    "svg.fonttype": "path",
    "text.parse_math": False,  # layer and kernel names are text, never TeX (an odd "$" must not fail a page)
    "font.family": "DejaVu Sans",
    "font.size": 8.5,
    "axes.titlesize": 9.5,
    "axes.titleweight": "bold",
    "axes.labelsize": 8.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#E6E6E6",
    "grid.linewidth": 0.6,
    "legend.fontsize": MIN_FONT_PT,
    "legend.frameon": False,
    "xtick.labelsize": MIN_FONT_PT,
    "ytick.labelsize": MIN_FONT_PT,
    "hatch.linewidth": 0.7,
    "figure.dpi": 100,
}
"""rcParams every figure is drawn with (on top of matplotlib's defaults)."""

_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(#|href="#)([^)"]+)')


def _inline(svg: str, key: str, title: str, desc: str) -> str:
    """Strip the prologue and metadata, prefix ids with ``key``, add title/desc and the ARIA attributes."""
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = _ID.sub(lambda m: f'id="{key}-{m.group(1)}"', svg)
    svg = _REF.sub(lambda m: f"{m.group(1)}{key}-{m.group(2)}", svg)
    head_end = svg.index(">") + 1
    head = svg[:head_end].replace(
        "<svg ", f'<svg id="{key}" role="img" aria-labelledby="{key}-title {key}-desc" ', 1
    )
    label = f'<title id="{key}-title">{escape(title)}</title><desc id="{key}-desc">{escape(desc)}</desc>'
    return head + label + svg[head_end:].rstrip() + "\n"


def render_svg(draw: Callable[[Figure], None], *, key: str, title: str, desc: str, size: tuple[float, float]) -> str:
    """Draw with ``draw(fig)`` on a ``size`` (inches) figure and return the SVG text, ready to inline."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        cast(Any, matplotlib.rcParams).update(RC)  # its stubs type the keys as a Literal of every rcParam
        fig = Figure(figsize=size, layout="constrained")
        FigureCanvasAgg(fig)
        draw(fig)
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    return _inline(buffer.getvalue(), key, title, desc)
