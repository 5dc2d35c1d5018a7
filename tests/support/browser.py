"""Measure a page in headless Chromium (Debian's ``chromium``): page width against the viewport, figure text size,
figures wider than their box.

The page is loaded, with a small script added that runs after load, into an iframe
exactly ``width`` CSS pixels wide (a headless window has a minimum width of its own);
the script writes what it measured into the outer document, ``chromium --dump-dom``
prints that document and the measurement is read back from it. No DevTools connection, no network: the flags turn off every
background service a closed network would refuse, and each run gets an empty
profile directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from html import escape, unescape
from pathlib import Path

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", "--virtual-time-budget=10000",
)

_PROBE = """
<script>
window.addEventListener("load", function () {
  var out = {innerWidth: window.innerWidth, scrollWidth: document.documentElement.scrollWidth,
             minFigureTextPx: null, smallest: null, glyphRuns: 0, wideElements: [], croppedFigures: []};
  document.querySelectorAll("figure svg text").forEach(function (t) {
    var m = t.getScreenCTM();
    var px = parseFloat(window.getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);  /* user units to CSS px */
    out.glyphRuns += 1;
    if (out.minFigureTextPx === null || px < out.minFigureTextPx) {
      out.minFigureTextPx = px;
      out.smallest = (t.closest("svg").id || "") + ": " + t.textContent;
    }
  });
  document.querySelectorAll("figure").forEach(function (f) {
    var box = f.getBoundingClientRect(), svg = f.querySelector("svg");
    if (svg && (svg.getBoundingClientRect().right > box.right + 0.5 || f.scrollWidth > f.clientWidth + 0.5)) {
      out.croppedFigures.push(svg.id);
    }
  });
  document.querySelectorAll("body *").forEach(function (el) {
    var r = el.getBoundingClientRect();
    if (r.right > window.innerWidth + 0.5 && out.wideElements.length < 5 && !el.closest(".table-wrap, pre, figure")) {
      out.wideElements.push(el.tagName + (el.id ? "#" + el.id : "") + " right=" + Math.round(r.right));
    }
  });
  var pre = document.createElement("pre");
  pre.id = "sparsedebug-measure-" + window.innerWidth;
  pre.textContent = JSON.stringify(out);
  parent.document.body.appendChild(pre);
});
</script>
"""


@dataclass(frozen=True)
class PageMeasure:
    """What the probe measured at one window width."""

    inner_width: int
    scroll_width: int
    min_figure_text_px: float | None
    smallest: str | None
    glyph_runs: int
    wide_elements: list[str]
    cropped_figures: list[str]


def chromium() -> str | None:
    """The chromium binary, or None when it is not installed."""
    return shutil.which("chromium") or (str(Path("/usr/bin/chromium")) if Path("/usr/bin/chromium").exists() else None)


def measure(html: str, width: int, height: int = 1000, binary: str | None = None) -> PageMeasure:
    """Load ``html`` in a ``width`` x ``height`` frame and measure it."""
    return measure_widths(html, (width,), height, binary)[width]


def measure_widths(html: str, widths: tuple[int, ...], height: int = 1000, binary: str | None = None) -> dict[int, PageMeasure]:
    """Load ``html`` in one frame per width (one browser start) and measure each."""
    exe = binary or chromium()
    if exe is None:
        raise FileNotFoundError("chromium is not installed")
    probed = escape(html.replace("</body>", _PROBE + "</body>", 1), quote=True)
    frames = "".join(
        f'<iframe style="width:{w}px;height:{height}px;border:0;display:block" srcdoc="{probed}"></iframe>' for w in widths
    )
    with tempfile.TemporaryDirectory(prefix="sparsedebug-chromium-") as tmp:
        page = Path(tmp) / "page.html"
        page.write_text(f'<!DOCTYPE html><html><body style="margin:0">{frames}</body></html>')
        profile = Path(tmp) / "profile"
        profile.mkdir()
        args = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={max(widths) + 100},{height + 100}",
                "--dump-dom", page.as_uri()]
        env = {**os.environ, "HOME": tmp}
        done = subprocess.run(args, capture_output=True, text=True, timeout=180, env=env, check=False)
    out = {}
    for width in widths:
        found = re.search(rf'<pre id="sparsedebug-measure-{width}">(.*?)</pre>', done.stdout, flags=re.S)
        if found is None:
            raise RuntimeError(f"chromium printed no measurement at {width} px (exit {done.returncode}): {done.stderr[-2000:]}")
        data = json.loads(unescape(found.group(1)))
        out[width] = PageMeasure(
            inner_width=data["innerWidth"], scroll_width=data["scrollWidth"], min_figure_text_px=data["minFigureTextPx"],
            smallest=data["smallest"], glyph_runs=data["glyphRuns"], wide_elements=data["wideElements"],
            cropped_figures=data["croppedFigures"],
        )
    return out
