"""CSV tables of power sources (Zeus, CodeCarbon): rows by header name, numbers refused with file, line and column."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from sparsedebug.core.bounds import MAX_LOG_READING, check_bounded
from sparsedebug.core.errors import UserError


@dataclass(frozen=True)
class Table:
    """A CSV file's header and its data rows, each with its line number."""

    path: Path
    header: list[str]
    rows: list[tuple[int, list[str]]]

    def column(self, name: str) -> int | None:
        """The index of the column named ``name`` (case-insensitive), None when the file has none."""
        lowered = [h.strip().lower() for h in self.header]
        return lowered.index(name) if name in lowered else None

    def number(self, line: int, row: list[str], index: int, *, blank_ok: bool = True) -> float | None:
        """The finite, non-negative number in ``row[index]``; None for an empty cell when ``blank_ok``."""
        text = row[index].strip()
        if not text and blank_ok:
            return None
        try:
            value = float(text)
        except ValueError:
            raise UserError(f"{self.path}: line {line}, column {self.header[index].strip()!r}: {text!r} is not a number") from None
        if not math.isfinite(value) or value < 0:
            raise UserError(f"{self.path}: line {line}, column {self.header[index].strip()!r}: {text!r} is not a finite, non-negative number")
        return check_bounded(value, f"{self.path}: line {line}, column {self.header[index].strip()!r}:", 0.0, MAX_LOG_READING)


def read_table(path: Path, text: str, required: tuple[str, ...], what: str) -> Table:
    """Parse ``text`` (the content of ``path``) as a CSV with a header holding every column in ``required``."""
    lines = [(k, row) for k, row in enumerate(csv.reader(io.StringIO(text)), start=1) if any(cell.strip() for cell in row)]
    if not lines:
        raise UserError(f"{path}: empty file, expected {what}")
    header_line, header = lines[0]
    table = Table(path, header, lines[1:])
    missing = [name for name in required if table.column(name) is None]
    if missing:
        raise UserError(f"{path}: line {header_line}: no {', '.join(repr(m) for m in missing)} column in the header of {what}")
    for line, row in table.rows:
        if len(row) != len(header):
            raise UserError(f"{path}: line {line}: {len(row)} fields, header has {len(header)}")
    if not table.rows:
        raise UserError(f"{path}: header only, no rows")
    return table
