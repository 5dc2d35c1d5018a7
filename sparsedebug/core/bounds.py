"""The one check that a number read from a file or given as an option can be a measurement at all.

:func:`check_bounded` refuses NaN, infinities and magnitudes no quantity of its kind can
have (a kernel that ran for a million years, a UTC offset of a day), as one ``UserError``
line naming where the number came from and the range it must lie in. Importers and
command options call it for every number they take in; the bounds of each quantity are
named constants beside it, so a message and a test read the same value.
"""

from __future__ import annotations

import math

from sparsedebug.core.errors import UserError
from sparsedebug.records.defaults import MAX_DURATION_MS

# The longest event a profiler trace can hold, in microseconds: a week (Kineto traces cover seconds to hours).
MAX_TRACE_DURATION_US = MAX_DURATION_MS * 1e3

# The latest event start in a trace, in microseconds: the last second of year 9999 (Kineto writes epoch or boot time).
MAX_TRACE_TIMESTAMP_US = 253_402_300_799.0 * 1e6

# The largest number a power or energy log's reading can be, whatever its unit: a millijoule counter run for a century
# at 1 kW reaches 3.2e15; a timestamp in epoch milliseconds, 2.5e14 in year 9999.
MAX_LOG_READING = 1e18

# The widest offset of a civil time zone from UTC (UTC+14, Line Islands).
MAX_UTC_OFFSET_H = 14.0


def in_bounds(value: float, low: float, high: float) -> bool:
    """Whether ``value`` is a finite number within ``[low, high]`` (NaN never is)."""
    return low <= value <= high and math.isfinite(value)


def check_bounded(value: float, what: str, low: float, high: float, unit: str = "") -> float:
    """``value`` when it is finite and within ``[low, high]``; else a one-line ``UserError``:
    ``WHAT nan: expected a finite number of UNIT between LOW and HIGH``."""
    if in_bounds(value, low, high):
        return value
    of = f" of {unit}" if unit else ""
    raise UserError(f"{what} {value:g}: expected a finite number{of} between {low:g} and {high:g}")
