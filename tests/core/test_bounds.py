"""The named check on numbers from files and options: finite and within the magnitude the quantity can have."""

from __future__ import annotations

import math

import pytest

from sparsedebug.core.bounds import MAX_TRACE_DURATION_US, MAX_UTC_OFFSET_H, check_bounded, in_bounds
from sparsedebug.core.errors import UserError


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 15.0, -14.5, 1e30])
def test_out_of_bounds_is_one_line_naming_the_number(value: float) -> None:
    assert not in_bounds(value, -MAX_UTC_OFFSET_H, MAX_UTC_OFFSET_H)
    with pytest.raises(UserError) as caught:
        check_bounded(value, "--smi-utc-offset", -MAX_UTC_OFFSET_H, MAX_UTC_OFFSET_H, "hours")
    assert str(caught.value) == f"--smi-utc-offset {value:g}: expected a finite number of hours between -14 and 14"


@pytest.mark.parametrize("value", [0.0, -14.0, 14.0, 5.5])
def test_within_bounds_is_returned(value: float) -> None:
    assert check_bounded(value, "x", -MAX_UTC_OFFSET_H, MAX_UTC_OFFSET_H) == value


def test_a_week_is_the_longest_trace_event() -> None:
    assert in_bounds(MAX_TRACE_DURATION_US, 0.0, MAX_TRACE_DURATION_US)
    assert not in_bounds(math.nextafter(MAX_TRACE_DURATION_US, math.inf), 0.0, MAX_TRACE_DURATION_US)
