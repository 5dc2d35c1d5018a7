"""The HTML document builder: one self-contained page of figures, their tables, and Markdown parts.

A page is a list of :class:`Section` (a figure with the tables that carry its
numbers, or a note saying why the figure could not be drawn) plus optional
Markdown parts (the memo, the deployment report) rendered below. Every figure
comes first, each with a caption linking to its table, then "The figures in
numbers", then the parts: a reader sees the pictures before the tables, and no
number lives only in a picture. The page has its CSS inline, its figures as
inline SVG, no script and no external reference (Markdown links and images are
not turned into HTML, raw HTML in Markdown is escaped), and a print stylesheet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

CSS = """
:root { --ink: #1a1a1a; --muted: #555; --rule: #d0d0d0; --band: #f5f5f5; --warn: #D55E00; --ok: #009E73; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0 auto; max-width: 1120px; padding: 1.2rem 1.4rem 3rem; color: var(--ink); background: #fff;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
h1 { font-size: 1.6rem; margin: 0.2rem 0 0.3rem; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 0.6rem; padding-bottom: 0.2rem; border-bottom: 2px solid var(--ink); }
h3 { font-size: 1.08rem; margin: 1.6rem 0 0.4rem; }
h4 { font-size: 1rem; margin: 1.2rem 0 0.3rem; }
p, li { max-width: 78ch; overflow-wrap: anywhere; }
h1, h2, h3, h4, figcaption, .subtitle, .banner { overflow-wrap: anywhere; }
.nw { white-space: nowrap; }
.subtitle { color: var(--muted); margin: 0 0 1rem; }
.banner { border-left: 6px solid var(--ink); background: var(--band); padding: 0.7rem 1rem; margin: 1rem 0; }
.banner.rollback, .banner.escalate { border-color: var(--warn); }
.banner.ship { border-color: var(--ok); }
.banner .decision { font-size: 1.25rem; font-weight: 700; margin: 0 0 0.3rem; }
nav.toc { font-size: 0.92rem; color: var(--muted); margin: 0.6rem 0 1rem; }
nav.toc a { color: inherit; margin-right: 1rem; }
figure { margin: 1.4rem 0; padding: 0.6rem 0.6rem 0.4rem; border: 1px solid var(--rule); border-radius: 4px;
  break-inside: avoid; page-break-inside: avoid; }
figure svg { display: block; width: 100%; max-width: FIGURE_MAX_PXpx; height: auto; margin: 0 auto; }
figcaption { font-size: 0.9rem; color: var(--muted); margin-top: 0.4rem; }
figcaption b { color: var(--ink); }
.missing { color: var(--muted); font-style: italic; }
.table-wrap { overflow-x: auto; max-width: 100%; margin: 0.4rem 0 1rem; }
table { border-collapse: collapse; font-size: 0.86rem; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: 0.2rem 0; caption-side: top; }
th, td { border: 1px solid var(--rule); padding: 0.22rem 0.5rem; vertical-align: top; text-align: left; overflow-wrap: break-word; }
td { max-width: 36rem; }
th { background: var(--band); }
td.num { text-align: right; white-space: nowrap; }
.note { font-size: 0.86rem; color: var(--muted); }
pre { background: var(--band); padding: 0.6rem 0.8rem; overflow-x: auto; font-size: 0.82rem; line-height: 1.25; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 0.9em; }
.part { border-top: 1px solid var(--rule); margin-top: 2.4rem; }
@media (max-width: 700px) { body { padding: 0.8rem; font-size: 14px; } }
@media print {
  body { max-width: none; padding: 0; font-size: 10.5pt; }
  nav.toc { display: none; }
  h2 { break-after: avoid; page-break-after: avoid; }
  h3, caption { break-after: avoid; page-break-after: avoid; }
  .table-wrap { overflow: visible; }
  table { font-size: 8.5pt; }
  tr { break-inside: avoid; page-break-inside: avoid; }
  td, th { word-break: break-word; }
  a { color: inherit; text-decoration: none; }
  @page { margin: 14mm 12mm; }
}
""".replace("FIGURE_MAX_PX", "{FIGURE_MAX_PX}")

FIGURE_MAX_PX = 640
"""Widest a figure is drawn (CSS px); narrower, it takes its box's width, text and all (no scrolling, no cropping).

The figures are ``svg.WIDTH`` (500) units wide and their smallest text is ``svg.FONT`` (13) units:
on a 400 px screen the figure box is about 359 px wide and that text 9.3 px tall; at 640 px it is 16.6 px.
"""
CSS = CSS.replace("{FIGURE_MAX_PX}", str(FIGURE_MAX_PX))


def no_break_arrows(html: str) -> str:
    """Keep every ``->`` of escaped text on one line (a browser may break after the hyphen)."""
    return html.replace("-&gt;", '<span class="nw">-&gt;</span>')


def wrap_tables(html: str) -> str:
    """Put every ``<table>`` of rendered Markdown in a box of its own that scrolls sideways when the table is wider."""
    return html.replace("<table>", '<div class="table-wrap"><table>').replace("</table>", "</table></div>")


@dataclass(frozen=True)
class Table:
    """A table of strings; ``numeric`` marks the columns to right-align."""

    caption: str
    header: Sequence[str]
    rows: Sequence[Sequence[str]]
    numeric: Sequence[bool] = ()
    note: str | None = None


@dataclass(frozen=True)
class Chart:
    """An inline SVG figure (drawn by :mod:`sparsedebug.render.html.figures`) and its visible caption."""

    svg: str
    caption: str


@dataclass(frozen=True)
class Section:
    """One figure and the tables that carry its numbers; ``chart`` None with ``missing`` saying why."""

    key: str
    title: str
    chart: Chart | None
    tables: Sequence[Table] = field(default_factory=tuple)
    missing: str | None = None


@dataclass(frozen=True)
class Part:
    """A Markdown document rendered below the figures (the memo, the deployment report); ``title`` names it in the contents."""

    key: str
    title: str
    markdown: str


def table_html(table: Table, key: str) -> str:
    """One ``<table>`` with caption, header and escaped cells."""
    numeric = list(table.numeric) + [False] * (len(table.header) - len(table.numeric))
    head = "".join(f"<th scope=\"col\">{escape(h)}</th>" for h in table.header)
    body = []
    for row in table.rows:
        cells = "".join(
            f'<td class="num">{escape(c)}</td>' if numeric[i] else f"<td>{escape(c)}</td>" for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    out = (
        f'<div class="table-wrap"><table id="{escape(key)}"><caption>{escape(table.caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )
    if table.note:
        out += f'<p class="note">{escape(table.note)}</p>'
    return no_break_arrows(out)


def markdown_html(text: str, shift: int = 1) -> str:
    """Markdown (CommonMark + tables) to HTML: raw HTML escaped, links and images left as text, headings shifted down."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").disable(["link", "image", "autolink"])
    tokens = md.parse(text)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1]) + shift)}"
    return no_break_arrows(wrap_tables(str(md.renderer.render(tokens, md.options, {}))))


def _figure_html(number: int, section: Section) -> str:
    assert section.chart is not None
    numbers = f' <a href="#num-{section.key}">Numbers: section {number} below.</a>' if section.tables else ""
    return (
        f'<figure id="fig-{section.key}">{section.chart.svg}'
        f"<figcaption><b>Figure {number}. {escape(section.title)}.</b> {no_break_arrows(escape(section.chart.caption))}{numbers}</figcaption></figure>"
    )


def _numbers_html(number: int, section: Section) -> str:
    parts = [f'<h3 id="num-{section.key}">{number}. {escape(section.title)}</h3>']
    if section.chart is None and section.missing:
        parts.append(f'<p class="missing">Not drawn: {escape(section.missing)}</p>')
    for i, table in enumerate(section.tables):
        parts.append(table_html(table, f"tab-{section.key}-{i}"))
    return "".join(parts)


def page(
    title: str,
    subtitle: str,
    sections: Sequence[Section],
    *,
    lead: str = "",
    parts: Sequence[Part] = (),
) -> str:
    """The whole HTML document: heading, ``lead`` (trusted HTML built here), figures, their tables, then ``parts``."""
    drawn = [s for s in sections if s.chart is not None]
    undrawn = [s for s in sections if s.chart is None]
    numbers = {s.key: i + 1 for i, s in enumerate(drawn + undrawn)}
    toc = ['<a href="#figures">Figures</a>', '<a href="#numbers">The figures in numbers</a>']
    toc += [f'<a href="#part-{escape(p.key)}">{escape(p.title)}</a>' for p in parts]
    body = [
        f"<header><h1>{escape(title)}</h1><p class=\"subtitle\">{escape(subtitle)}</p>{lead}",
        f'<nav class="toc">{"".join(toc)}</nav></header>',
        '<section id="figures"><h2>Figures</h2>',
    ]
    body += [_figure_html(numbers[s.key], s) for s in drawn]
    if undrawn:
        items = "".join(f"<li><b>{escape(s.title)}</b>: {escape(s.missing or 'no data')}</li>" for s in undrawn)
        body.append(f'<p class="missing">Not drawn for these records:</p><ul class="missing">{items}</ul>')
    body.append('</section><section id="numbers"><h2>The figures in numbers</h2>')
    body += [_numbers_html(numbers[s.key], s) for s in drawn + undrawn]
    body.append("</section>")
    for part in parts:
        body.append(f'<section class="part" id="part-{escape(part.key)}">')
        body.append(markdown_html(part.markdown, shift=1))
        body.append("</section>")
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def figure_page(title: str, subtitle: str, sections: Sequence[Section], *, lead: str = "") -> str:
    """A page of figure+table sections only (``import trace --html``, ``quality --html``): one call."""
    return page(title, subtitle, sections, lead=lead)
