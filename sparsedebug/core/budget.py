"""Resource bounds: refuse a request this machine cannot do before allocating anything for it.

A request (a replay, a benchmark) estimates from its shapes and counts the memory it will
hold at its peak and the arithmetic it will do; :func:`check_budget` compares them with
what this machine has and refuses, as a one-line ``UserError`` giving the estimate and
the limit, when they do not fit:

- **memory**: at most half of the memory available now (``MemAvailable`` in
  ``/proc/meminfo``, capped by a cgroup v2 ``memory.max`` when the process runs in one; the
  physical memory where neither exists). ``SPARSEDEBUG_MAX_MEMORY_GB`` sets another limit.
- **time**: at most :data:`DEFAULT_MAX_SECONDS` of this machine's time. The time is a
  lower bound: the request's floating-point work at the fp32 GEMM rate this machine
  reaches right now (a 256^3 ``numpy.matmul``, timed in a few milliseconds when the check
  runs), plus its kernel calls at the cost of a small numpy call. Real kernels run
  slower than BLAS at its best, so a refused request would certainly take longer.
  ``SPARSEDEBUG_MAX_SECONDS`` sets another limit.

The estimates are deliberately generous upper bounds on memory (the replay's is checked
against ``tracemalloc`` peaks in the tests) and lower bounds on time, so a refusal is
never a guess that the request would have failed: it says what the request would need.
"""

from __future__ import annotations

import os
import time
from functools import lru_cache
from pathlib import Path

from sparsedebug.core.errors import UserError
from sparsedebug.records.base import Record
from sparsedebug.records.defaults import MAX_REPEATS as MAX_REPEATS

DEFAULT_MAX_SECONDS = 3600.0
"""Default time limit of one request: an hour of this machine's time."""

MEMORY_SHARE = 0.5
"""Share of the available memory one request may plan to hold."""

_GEMM_N = 256
_SLOW_FLOPS = 1e9
_SLOW_CALL = 1e-3
"""A rate (1 GFLOP/s, 1 ms a call) far below any machine's, used only to skip timing this one for small requests."""


class Cost(Record):
    """What a request would need: peak bytes held, floating-point operations and kernel calls."""

    bytes: float
    flops: float
    calls: float
    what: str
    """How the request is named in a refusal (``workload 'x' (tokens 1x1000000, repeats 20)``)."""


def _gib(n: float) -> str:
    """Bytes in binary units (MiB up to EiB)."""
    for unit, shift in (("EiB", 60), ("PiB", 50), ("TiB", 40), ("GiB", 30)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.3g} {unit}"
    return f"{n / (1 << 20):.3g} MiB"


def _duration(seconds: float) -> str:
    if seconds >= 86400 * 365:
        return f"{seconds / (86400 * 365):.3g} years"
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.1f} s"


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_room() -> int | None:
    """Bytes left under this process's cgroup v2 ``memory.max``, when one is set."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            base = Path("/sys/fs/cgroup") / line[3:].lstrip("/")
            try:
                limit = (base / "memory.max").read_text().strip()
                current = int((base / "memory.current").read_text().strip())
            except (OSError, ValueError):
                return None
            if limit == "max" or not limit.isdigit():
                return None
            return max(0, int(limit) - current)
    return None


def available_memory() -> tuple[int, str]:
    """Bytes of memory available to this process now, and where the figure came from."""
    found: list[tuple[int, str]] = []
    meminfo = _meminfo_available()
    if meminfo is not None:
        found.append((meminfo, "available"))
    room = _cgroup_room()
    if room is not None:
        found.append((room, "left under the cgroup limit"))
    if not found:
        try:
            pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
            found.append((int(pages) * int(size), "physical"))
        except (ValueError, OSError, AttributeError):
            return 0, "unknown"
    return min(found)


def _env_float(name: str) -> float | None:
    text = os.environ.get(name)
    if text is None or not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"{name}={text!r}: expected a positive number") from None
    if not value > 0:
        raise UserError(f"{name}={text!r}: expected a positive number")
    return value


@lru_cache(maxsize=1)
def machine_rate() -> tuple[float, float]:
    """This machine's fp32 GEMM rate (FLOP/s) and the cost of one small numpy call (s), both at their best now.

    The GEMM is 256^3, best of three with BLAS's own threads and best of three on one
    thread (threaded BLAS on a busy machine can be far slower than one thread): the
    higher rate is kept, so the time estimate stays a lower bound.
    """
    import numpy as np
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    a = rng.standard_normal((_GEMM_N, _GEMM_N), dtype=np.float32)
    b = rng.standard_normal((_GEMM_N, _GEMM_N), dtype=np.float32)

    def best() -> float:
        fastest = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            a @ b
            fastest = min(fastest, time.perf_counter() - start)
        return fastest

    threaded = best()
    with threadpool_limits(limits=1, user_api="blas"):
        single = best()
    small = np.ones(8)
    start = time.perf_counter()
    for _ in range(200):
        np.add(small, small)
    call = (time.perf_counter() - start) / 200
    return 2.0 * _GEMM_N**3 / max(min(threaded, single), 1e-9), call


def memory_limit() -> tuple[float, str]:
    """The memory one request may plan to hold, and the limit in words."""
    override = _env_float("SPARSEDEBUG_MAX_MEMORY_GB")
    if override is not None:
        return override * (1 << 30), f"the {override:g} GiB limit (SPARSEDEBUG_MAX_MEMORY_GB)"
    available, source = available_memory()
    return available * MEMORY_SHARE, f"half of the {_gib(available)} of memory {source}"


def time_limit() -> tuple[float, str]:
    """The seconds one request may take, and the limit in words."""
    override = _env_float("SPARSEDEBUG_MAX_SECONDS")
    seconds = override if override is not None else DEFAULT_MAX_SECONDS
    return seconds, f"the {_duration(seconds)} limit (SPARSEDEBUG_MAX_SECONDS)"


def check_budget(cost: Cost, *, timed: bool = True) -> None:
    """Refuse ``cost`` when it needs more memory or (``timed``) time than this machine allows; one line each."""
    limit, limit_text = memory_limit()
    if limit > 0 and cost.bytes > limit:
        raise UserError(
            f"{cost.what}: needs about {_gib(cost.bytes)} of memory, more than {limit_text}; "
            "use fewer tokens or narrower layers"
        )
    if not timed:
        return
    seconds_limit, seconds_text = time_limit()
    if cost.flops / _SLOW_FLOPS + cost.calls * _SLOW_CALL <= seconds_limit:
        return  # fits even on a machine far slower than any this runs on: no need to measure this one
    rate, call = machine_rate()
    seconds = cost.flops / rate + cost.calls * call
    if seconds > seconds_limit:
        raise UserError(
            f"{cost.what}: needs at least {_duration(seconds)} on this machine ({cost.flops:.3g} FLOPs at its "
            f"{rate / 1e9:.1f} GFLOP/s, {cost.calls:.3g} kernel calls), more than {seconds_text}; "
            "use fewer repeats or tokens"
        )
