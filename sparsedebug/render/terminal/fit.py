"""Tables that stay readable in a narrow terminal (80 columns), and all of them with ``--wide``.

Renderers build every column and mark the ones a reader can do without, in the order
they should go (:func:`optional`). :func:`fit` then, for a table that cannot fit the
terminal without cutting words (rich would squeeze columns to nothing or end names in
``…``): drops optional columns, first marked first, until what remains fits; when even
that is too wide, lets every column fold, so a long name (``layers.1.post_attention_layernorm``)
continues on the next line instead of being cut; and says under the table which columns
it left out and that ``--wide`` shows them. With ``wide`` nothing is dropped or
folded and the table is printed at its natural width (the terminal wraps the lines).
A table that fits is printed exactly as built.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

_OPTIONAL: WeakKeyDictionary[Table, list[str]] = WeakKeyDictionary()


def optional(table: Table, *headers: str) -> Table:
    """Mark columns of ``table`` (by header) that may be left out at narrow widths, first named first."""
    _OPTIONAL.setdefault(table, []).extend(headers)
    return table


def _header(column: object) -> str:
    header = getattr(column, "header", "")
    return header.plain if isinstance(header, Text) else str(header)


_ROOM = 100_000


def _measure(console: Console, table: Table) -> Measurement:
    """A table's minimum and natural widths (measured with room to spare: rich clamps to the width it is given)."""
    return Measurement.get(console, console.options.update_width(_ROOM), table)


def natural_width(console: Console, renderable: RenderableType) -> int:
    """The width a renderable would take with room to spare (its widest table's natural width)."""
    return max((_measure(console, t).maximum for t in _tables(renderable)), default=console.width)


def _tables(renderable: RenderableType) -> list[Table]:
    if isinstance(renderable, Table):
        return [renderable]
    if isinstance(renderable, Group):
        return [table for child in renderable.renderables for table in _tables(child)]
    return []


FOLD_FLOOR = 12
"""Narrowest a column its renderer lets fold (``overflow="fold"``) is counted at when deciding what fits."""


def _minimum(console: Console, table: Table) -> int:
    """The narrowest ``table`` renders without cutting a word, except in the columns its renderer lets fold.

    Rich's own minimum counts the longest word of every cell (the whole cell for a
    ``no_wrap`` column); a column declared ``overflow="fold"`` counts at most
    :data:`FOLD_FLOOR` (or its longest header word).
    """
    saved = [column.max_width for column in table.columns]
    for column in table.columns:
        if column.overflow == "fold" and not column.no_wrap:
            longest_header = max((len(word) for word in _header(column).split()), default=1)
            column.max_width = max(FOLD_FLOOR, longest_header, column.min_width or 0)
    try:
        return _measure(console, table).minimum
    finally:
        for column, max_width in zip(table.columns, saved, strict=True):
            column.max_width = max_width


def _fold_all(table: Table) -> None:
    for column in table.columns:
        column.no_wrap = False
        column.overflow = "fold"
        column.max_width = None


def _fit_table(console: Console, table: Table, width: int) -> None:
    """Leave out optional columns until the rest fits ``width``; fold, never cut, the words that still do not fit."""
    measured = _measure(console, table)
    if measured.maximum <= width:
        return
    for column in table.columns:
        if not column.no_wrap:
            column.overflow = "fold"  # rich shortens a column below its longest word at times: fold it, never '…'
    if measured.minimum <= width:
        return  # rich wraps it at word boundaries
    dropped: list[str] = []
    for header in _OPTIONAL.get(table, []):
        if _minimum(console, table) <= width:
            break
        index = next((i for i, column in enumerate(table.columns) if _header(column) == header), None)
        if index is not None and len(table.columns) > 1:
            del table.columns[index]
            dropped.append(header)
    if _measure(console, table).minimum > width:
        _fold_all(table)  # a word wider than its column continues on the next line instead of ending in '…'
    if dropped:
        note = f"{len(dropped)} column(s) left out to fit {width} columns: {', '.join(dropped)}; --wide shows all"
        table.caption = f"{table.caption}\n{note}" if table.caption else note


def fit(console: Console, renderable: RenderableType, width: int, *, wide: bool = False) -> RenderableType:
    """``renderable`` with each of its tables fitted to ``width`` (nothing changes with ``wide``)."""
    if not wide:
        for table in _tables(renderable):
            _fit_table(console, table, width)
    return renderable
