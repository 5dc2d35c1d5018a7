"""Resource bounds: refuse a request this machine cannot do before allocating anything for it.

A request (a replay, a benchmark) estimates from its shapes and counts the memory it will
hold at its peak and the arithmetic it will do; :func:`check_budget` compares them with
what this machine has and refuses, as a one-line ``UserError`` giving the estimate and
the limit, when they do not fit:

- **memory**: at most half of the memory available now (``MemAvailable`` in
  ``/proc/meminfo``, capped by a cgroup v2 ``memory.max`` when the process runs in one and
  by the room left under the address-space limit, ``ulimit -v``, when one is set; the
  physical memory where none exists). ``SPARSEDEBUG_MAX_MEMORY_GB`` sets another limit.
  An allocation that fails all the same (``MemoryError``) is :func:`out_of_memory`: one
  line naming the limits, exit 2.
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

from pydantic import Field

from sparsedebug.core.errors import UserError
from sparsedebug.records.base import Record
from sparsedebug.records.defaults import MAX_REPEATS as MAX_REPEATS
from sparsedebug.records.defaults import MAX_TEXT_TOKENS as MAX_TEXT_TOKENS

# Default time limit of one request: an hour of this machine's time.
DEFAULT_MAX_SECONDS = 3600.0

# Share of the available memory one request may plan to hold.
MEMORY_SHARE = 0.5

_GEMM_N = 256
_SLOW_FLOPS = 1e9
# A rate (1 GFLOP/s, 1 ms a call) far below any machine's, used only to skip timing this one for small requests.
_SLOW_CALL = 1e-3


class Cost(Record):
    """What a request would need: peak bytes held, floating-point operations and kernel calls."""

    bytes: float
    flops: float
    calls: float
    what: str = Field(description="How the request is named in a refusal (``workload 'x' (tokens 1x1000000, repeats 20)``).")


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


def address_space_limit() -> int | None:
    """This process's address-space limit in bytes (``ulimit -v``, RLIMIT_AS), None when unlimited."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY or soft < 0 else int(soft)


def _address_space_used() -> int | None:
    """Bytes of address space this process maps now (``VmSize`` in ``/proc/self/status``)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _address_space_room() -> int | None:
    """Bytes left under the address-space limit (``ulimit -v``), when one is set.

    Every allocation, and every thread's stack, maps address space: under ``ulimit -v`` an
    array fails to allocate long before physical memory runs out, so this room counts
    as memory available (when the current mapping is unknown, the whole limit does).
    """
    limit = address_space_limit()
    if limit is None:
        return None
    used = _address_space_used()
    return max(0, limit - (used or 0))


def available_memory() -> tuple[int, str]:
    """Bytes of memory available to this process now, and where the figure came from (the smallest of
    ``MemAvailable``, the room under a cgroup limit and the room under the address-space limit)."""
    found: list[tuple[int, str]] = []
    meminfo = _meminfo_available()
    if meminfo is not None:
        found.append((meminfo, "available"))
    room = _cgroup_room()
    if room is not None:
        found.append((room, "left under the cgroup limit"))
    space = _address_space_room()
    if space is not None:
        found.append((space, "left under the address-space limit (ulimit -v)"))
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


def _limits_in_force(*, always_space: bool = False) -> str:
    """The memory available now and where that figure comes from, and the address-space limit when it is another
    (or whenever one is set, with ``always_space``)."""
    available, source = available_memory()
    limits = [f"{_gib(available)} of memory {source}"]
    space = address_space_limit()
    if space is not None and (always_space or "ulimit -v" not in source):
        limits.append(f"address-space limit (ulimit -v) {_gib(space)}")
    return "; ".join(limits)


def out_of_memory(exc: BaseException) -> UserError:
    """The one-line error for an allocation that failed (``MemoryError``, numpy's ``_ArrayMemoryError``,
    a library that could not map itself): what failed and the limits in force, with what to do."""
    what = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return UserError(
        f"out of memory: {what} ({_limits_in_force()}); use fewer tokens or narrower layers, "
        "or raise the limit (ulimit -v, the cgroup's memory.max)"
    )


# What the dynamic loader says when a shared object does not fit in the memory or address space left.
_MAP_FAILURES = ("failed to map segment", "cannot allocate memory", "cannot map zero-fill pages")


def library_not_mapped(exc: ImportError) -> UserError | None:
    """The one-line error for a library whose shared object the loader could not map (an ``ImportError`` under
    ``ulimit -v`` or a tight cgroup, e.g. scipy's ``_highspy/_core...so``): the file, the loader's words and the
    limits in force; None for any other ``ImportError`` (a missing package is a bug or a broken install)."""
    text = str(exc).strip()
    if not any(marker in text.lower() for marker in _MAP_FAILURES):
        return None
    library, _, reason = text.partition(": ")
    parts = Path(library).parts
    packages = [i for i, part in enumerate(parts) if part in ("site-packages", "dist-packages")]
    name = str(Path(*parts[packages[-1] + 1:])) if packages and packages[-1] + 1 < len(parts) else library
    return UserError(
        f"a shared library could not be loaded: {name}: {reason or text} ({_limits_in_force(always_space=True)}); "
        "raise the limit (ulimit -v, the cgroup's memory.max)"
    )


def start_numpy_within_limits() -> None:
    """Import numpy now, under ``ulimit -v``, and refuse in one line when it cannot start.

    Nothing happens without that limit (numpy is imported lazily, by the commands that
    use it). Under one, numpy's C extensions may fail to map (an ``ImportError``) and
    OpenBLAS, failing to start its threads, raises SIGINT at the process itself: a SIGINT
    during this import is that failure, not a Ctrl-C (the command would otherwise report
    a false interruption). Both become a ``UserError`` naming the limit.
    """
    import signal
    import sys
    import threading

    space = address_space_limit()
    if "numpy" in sys.modules or space is None:
        return
    limit_text = f"the address-space limit (ulimit -v) of {_gib(space)}"
    raised: list[int] = []
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if in_main else None
    if in_main:
        signal.signal(signal.SIGINT, lambda signum, frame: raised.append(signum))
    failure: str | None = None
    try:
        import numpy  # noqa: F401  (started here on purpose)
    except (ImportError, MemoryError) as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        failure = lines[-1] if lines else type(exc).__name__
    finally:
        if in_main:
            signal.signal(signal.SIGINT, previous)
    if raised:
        raise UserError(
            f"numpy's BLAS could not start its threads under {limit_text}; raise the limit or set OPENBLAS_NUM_THREADS=1"
        )
    if failure is not None:
        raise UserError(f"numpy could not load under {limit_text} ({failure}); raise the limit")

