"""Untraced per-forward latencies (``--latency BASE CAND``): the same runs timed with the profiler off.

A profiler trace times every iteration with the profiler's own cost per op inside it; on a run whose
GPU waits on the host, that cost is a large share of the latency and can reverse the order of two
runs. Timings taken without the profiler (CUDA events around each forward, ``torch.utils.benchmark``)
replace the traced latencies of the outcome stage, the gate and the memo when given.

Accepted files, one value per forward:

* CSV with a header: the first column whose name carries a unit (``latency_ms``, ``ms``,
  ``time_us``, ``seconds``, ``time_s``...), in that unit; without a header, one number per line
  in milliseconds.
* JSON: a list of numbers (milliseconds), or an object with one list under a key that carries
  its unit (``latency_ms``, ``times_ms``, ``times_us``) or ``times`` in seconds (what
  ``torch.utils.benchmark``'s ``Measurement.times`` holds, one value per measured block).
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from sparsedebug.core.bounds import check_bounded
from sparsedebug.core.errors import UserError
from sparsedebug.core.io import load_json_text, read_text
from sparsedebug.core.stats import percentiles
from sparsedebug.records.defaults import MAX_DURATION_MS
from sparsedebug.records.run import RunRecord

# Milliseconds per unit, by the unit a column or key name ends in.
_UNITS = {"ms": 1.0, "us": 1e-3, "µs": 1e-3, "ns": 1e-6, "s": 1e3, "seconds": 1e3, "sec": 1e3}

# Fewest values a latency file must hold: the outcome's rank test needs at least three per side.
MIN_LATENCIES = 3


def _unit(name: str) -> float | None:
    """Milliseconds per unit of a column or key named ``name`` (``latency_ms``, ``ms``, ``time_s``), None when it names none."""
    words = name.strip().lower().replace("(", "_").replace(")", "").replace(" ", "_").replace("-", "_").split("_")
    for word in reversed(words):
        if word in _UNITS:
            return _UNITS[word]
    return None


def _check(path: Path, values: list[float], where: list[str]) -> list[float]:
    for value, place in zip(values, where, strict=True):
        if not math.isfinite(value) or value <= 0:
            raise UserError(f"{path}: {place}: {value!r} is not a positive, finite latency")
        check_bounded(value, f"{path}: {place}: latency (ms)", 0.0, MAX_DURATION_MS, "milliseconds")
    if len(values) < MIN_LATENCIES:
        raise UserError(f"{path}: {len(values)} latencies: at least {MIN_LATENCIES} forwards are needed (one value per forward)")
    return values


def _number(path: Path, text: str, place: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise UserError(f"{path}: {place}: {text.strip()!r} is not a number") from None


def _from_json(path: Path, data: object) -> list[float]:
    if isinstance(data, dict):
        keyed = [(k, v) for k, v in data.items() if isinstance(v, list) and (_unit(k) is not None or k == "times")]
        if len(keyed) != 1:
            raise UserError(f"{path}: expected one list of latencies under a key with its unit (latency_ms, times_us; "
                            f"times in seconds as torch.utils.benchmark writes it), found keys {', '.join(map(str, data)) or 'none'}")
        key, values = keyed[0]
        scale = _UNITS["s"] if key == "times" else _unit(key) or 1.0
        where = f"key {key!r}"
    elif isinstance(data, list):
        values, scale, where = data, 1.0, "the list"
    else:
        raise UserError(f"{path}: expected a JSON list of latencies in ms, or an object holding one list")
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(numbers) != len(values):
        raise UserError(f"{path}: {where}: every latency must be a number")
    return _check(path, [float(v) * scale for v in numbers], [f"{where}, item {k + 1}" for k in range(len(numbers))])


def _from_csv(path: Path, text: str) -> list[float]:
    rows = [row for row in csv.reader(io.StringIO(text)) if any(cell.strip() for cell in row)]
    if not rows:
        raise UserError(f"{path}: empty file, expected one latency per forward")
    header = rows[0]
    headed = any(cell.strip() and not _is_number(cell) for cell in header)
    if headed:
        column = next((k for k, name in enumerate(header) if _unit(name) is not None), None)
        if column is None:
            raise UserError(f"{path}: no column names its unit (latency_ms, time_us, seconds...) in the header {header}")
        scale, name, body, first = _unit(header[column]) or 1.0, header[column].strip(), rows[1:], 2
    else:
        column, scale, name, body, first = 0, 1.0, "the first column (ms)", rows, 1
    values: list[float] = []
    where: list[str] = []
    for line, row in enumerate(body, start=first):
        place = f"line {line}, column {name!r}"
        if column >= len(row) or not row[column].strip():
            raise UserError(f"{path}: {place}: no value")
        values.append(_number(path, row[column], place) * scale)
        where.append(place)
    return _check(path, values, where)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def load_latencies(path: Path) -> list[float]:
    """The per-forward latencies in ``path`` (CSV or JSON, see the module docstring), in milliseconds."""
    text = read_text(path)
    if path.suffix.lower() == ".json" or text.lstrip().startswith(("[", "{")):
        return _from_json(path, load_json_text(text, str(path)))
    return _from_csv(path, text)


def with_untraced_latency(run: RunRecord, path: Path) -> RunRecord:
    """``run`` judged on the untraced latencies of ``path``: they become the outcome's samples; the trace's own are kept."""
    samples = load_latencies(path)
    outcome = run.outcome
    return run.model_copy(update={"outcome": outcome.model_copy(update={
        "latency_samples_ms": samples,
        "latency": percentiles(samples),
        "latency_timing": "untraced",
        "latency_file": str(path),
        "traced_latency_samples_ms": outcome.traced_latency_samples_ms or outcome.latency_samples_ms,
    })})


def on_trace_clock(run: RunRecord) -> RunRecord:
    """``run`` with the trace's own per-iteration latencies back in its outcome when untraced ones replaced them
    (``--latency``): the clock its layers, host gaps and busy time were measured on, which attribution and the rules
    that split a latency into parts must read. Any other run is returned as it is."""
    out = run.outcome
    if out.latency_timing != "untraced" or not out.traced_latency_samples_ms:
        return run
    traced = list(out.traced_latency_samples_ms)
    return run.model_copy(update={"outcome": out.model_copy(update={
        "latency_samples_ms": traced, "latency": percentiles(traced), "latency_timing": "traced",
    })})


def with_untraced_latencies(base: RunRecord, cand: RunRecord, paths: tuple[Path, Path] | None) -> tuple[RunRecord, RunRecord]:
    """Both runs with the untraced latencies of ``--latency BASE CAND`` (as given when None)."""
    if paths is None:
        return base, cand
    return with_untraced_latency(base, paths[0]), with_untraced_latency(cand, paths[1])
