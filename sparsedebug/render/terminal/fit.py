"""Tables that stay readable in a narrow terminal (80 columns), and all of them with ``--wide``.

Renderers build every column and mark the ones a reader can do without, in the order
they should go (:func:`optional`), and the long-text columns whose cells read better
as notes under the table (:func:`under`). :func:`fit` then, for a table wider than the
terminal: moves the ``under`` columns below the table (one line per row, named by the
row's first cell), drops optional columns, first marked first, until what remains fits,
and gives each column a width of its own: a column of short words (numbers, units,
reasons, headers such as ``tokens``) never narrower than its longest word, so no
number or header is split; a column of long names (``encoder.layer.0.attention.self.query``,
kernel names) folds, so the name continues on the next line instead of being cut
(never an ``…``). It says under the table which columns it left out and that
``--wide`` shows them. With ``wide`` nothing is moved, dropped or folded and the table
is printed at its natural width (the terminal wraps the lines). A table that fits is
printed exactly as built.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

_OPTIONAL: WeakKeyDictionary[Table, list[str]] = WeakKeyDictionary()
_UNDER: WeakKeyDictionary[Table, list[str]] = WeakKeyDictionary()


def optional(table: Table, *headers: str) -> Table:
    """Mark columns of ``table`` (by header) that may be left out at narrow widths, first named first."""
    _OPTIONAL.setdefault(table, []).extend(headers)
    return table


def under(table: Table, *headers: str) -> Table:
    """Mark long-text columns of ``table`` (by header) whose cells go under the table, one note per row, when it does not fit."""
    _UNDER.setdefault(table, []).extend(headers)
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
"""Narrowest a column of long names is given when the table must fold to fit."""
LONGEST_WORD = 20
"""A column whose longest word is at most this many cells holds words (kept whole); a longer one holds names (folded)."""


def _plain(cell: object) -> str:
    if isinstance(cell, Text):
        return cell.plain
    return str(cell)  # the console prints strings without markup (cli.common.console)


def _index(table: Table, header: str) -> int | None:
    return next((i for i, column in enumerate(table.columns) if _header(column) == header), None)


def _move_under(table: Table) -> list[str]:
    """Remove the ``under`` columns from ``table``; return their cells as notes, one per non-empty cell."""
    notes: list[str] = []
    for header in _UNDER.get(table, []):
        index = _index(table, header)
        if index is None or len(table.columns) < 2:
            continue
        column = table.columns[index]
        keys = table.columns[0 if index else 1]._cells
        for row, cell in enumerate(column._cells):
            text = _plain(cell).strip()
            if text and text != "-":
                key = _plain(keys[row]).strip() if row < len(keys) else str(row + 1)
                if key.replace(".", "", 1).isdigit():
                    key = f"{_header(table.columns[0 if index else 1])} {key}"
                notes.append(f"{key} ({header}): {text}")
        del table.columns[index]
        for position, kept in enumerate(table.columns):
            kept._index = position
    return notes


def _ranges(console: Console, table: Table) -> list[tuple[int, int, int]]:
    """Per column: (padding, longest word, natural width), content widths without padding."""
    options = console.options.update_width(_ROOM)
    out = []
    for index, column in enumerate(table.columns):
        column._index = index
        pad = table._get_padding_width(index)
        saved = column.no_wrap
        column.no_wrap = False
        try:
            measured = table._measure_column(console, options, column)
        finally:
            column.no_wrap = saved
        longest = max(1, measured.minimum - pad)
        if column.justify == "right":  # a number and its unit ("512.0 KiB") stay on one line
            longest = max([longest, *(cell_len(_plain(cell)) for cell in column._cells)])
        out.append((pad, longest, max(longest, measured.maximum - pad)))
    return out


def _floors(ranges: list[tuple[int, int, int]], *, fold_words: bool) -> list[int]:
    """The narrowest each column may get: its longest word, or :data:`FOLD_FLOOR` for names (and for all with ``fold_words``)."""
    floors = []
    for _, longest, natural in ranges:
        if fold_words or longest > LONGEST_WORD:
            floors.append(min(natural, max(FOLD_FLOOR if longest > LONGEST_WORD else min(longest, FOLD_FLOOR), 1)))
        else:
            floors.append(longest)
    return floors


def _drop_floors(table: Table, ranges: list[tuple[int, int, int]]) -> list[int]:
    """What decides whether to leave out another optional column: names whole, except in columns declared ``overflow="fold"``."""
    return [
        natural if column.no_wrap else (min(natural, FOLD_FLOOR) if column.overflow == "fold" and longest > LONGEST_WORD else longest)
        for column, (_, longest, natural) in zip(table.columns, ranges, strict=True)
    ]


def _room(table: Table, ranges: list[tuple[int, int, int]], width: int) -> int:
    return width - table._extra_width - sum(pad for pad, _, _ in ranges)


def _allocate(floors: list[int], naturals: list[int], room: int) -> list[int]:
    """Widths between ``floors`` and ``naturals`` that fill ``room``: the widest columns give way first.

    Every column gets ``min(natural, cap)`` (at least its floor) for the largest ``cap``
    that fits, as rich narrows a table, and what is left is handed out a cell at a time.
    """
    naturals = [max(f, n) for f, n in zip(floors, naturals, strict=True)]
    if sum(naturals) <= room:
        return naturals
    if sum(floors) >= room:
        return list(floors)

    def widths(cap: int) -> list[int]:
        return [max(f, min(n, cap)) for f, n in zip(floors, naturals, strict=True)]

    low, high = 0, max(naturals)
    while low < high:
        mid = (low + high + 1) // 2
        if sum(widths(mid)) <= room:
            low = mid
        else:
            high = mid - 1
    out = widths(low)
    for index in sorted(range(len(out)), key=lambda i: -naturals[i]):
        if sum(out) >= room:
            break
        if out[index] < naturals[index]:
            out[index] += 1
    return out


def _fit_table(console: Console, table: Table, width: int) -> RenderableType:
    """Fit ``table`` to ``width`` (see the module docstring); the table, or the table with its notes under it."""
    if _measure(console, table).maximum <= width:
        return table
    notes = _move_under(table)
    ranges = _ranges(console, table)
    dropped: list[str] = []
    if _measure(console, table).maximum > width:
        for header in _OPTIONAL.get(table, []):
            if sum(_drop_floors(table, ranges)) <= _room(table, ranges, width):
                break  # every word whole, and every name its renderer does not let fold: nothing more to leave out
            index = _index(table, header)
            if index is not None and len(table.columns) > 1:
                del table.columns[index]
                dropped.append(header)
                ranges = _ranges(console, table)
        room = _room(table, ranges, width)
        # a column its renderer keeps on one line (no_wrap) stays so, and every name whole, when the room allows it
        floors = [natural if column.no_wrap else longest for column, (_, longest, natural) in zip(table.columns, ranges, strict=True)]
        if sum(floors) > room:
            floors = [longest for _, longest, _ in ranges]
        if sum(floors) > room:
            floors = _floors(ranges, fold_words=False)
        if sum(floors) > room:
            floors = _floors(ranges, fold_words=True)  # last resort: even words fold, nothing is cut
        widths = _allocate(floors, [natural for _, _, natural in ranges], room)
        for column, (_, longest, natural), given in zip(table.columns, ranges, widths, strict=True):
            column.min_width = None
            column.max_width = None
            column.width = max(1, given)
            column.no_wrap = False
            column.overflow = "fold"
    if dropped:
        note = f"{len(dropped)} column(s) left out to fit {width} columns: {', '.join(dropped)}; --wide shows all"
        table.caption = f"{table.caption}\n{note}" if table.caption else note
    if not notes:
        return table
    return Group(table, *(Text(note) for note in notes))


def fit(console: Console, renderable: RenderableType, width: int, *, wide: bool = False) -> RenderableType:
    """``renderable`` with each of its tables fitted to ``width`` (nothing changes with ``wide``)."""
    if wide:
        return renderable
    if isinstance(renderable, Table):
        return _fit_table(console, renderable, width)
    if isinstance(renderable, Group):
        children = renderable.renderables
        for index, child in enumerate(children):
            children[index] = fit(console, child, width)
    return renderable
