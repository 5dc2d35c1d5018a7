"""Split a kernel's independent pieces (row blocks, row tiles) across the cores.

The kernels make many medium-sized BLAS calls (one per row block or tile). A
multi-threaded BLAS synchronises its threads on every call, which costs a few
percent on a quiet machine and a great deal when other processes compete for
the cores. So the pieces are spread over as many Python worker threads as BLAS
has threads, and BLAS is limited to one thread for the duration (numpy releases
the GIL inside BLAS, ``take`` and ``put``): each core gathers and multiplies its
own pieces, with no per-call synchronisation, and the gathers run in parallel too.

The limit is process-wide while a product runs (``threadpoolctl``), then
restored; another thread calling BLAS at that moment would run single-threaded.
With one BLAS thread, or one piece, everything runs inline.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

_lock = threading.Lock()
_state: dict[str, Any] = {}


def _controller() -> Any:
    """The threadpoolctl controller for BLAS, built once (probing libraries is slow)."""
    with _lock:
        if "controller" not in _state:
            from threadpoolctl import ThreadpoolController

            _state["controller"] = ThreadpoolController().select(user_api="blas")
        return _state["controller"]


def blas_threads() -> int:
    """Threads numpy's BLAS uses now (1 when it cannot be told)."""
    controller = _controller()
    counts = [int(lib.num_threads) for lib in controller.lib_controllers]
    return max(counts) if counts else 1


def _pool(workers: int) -> ThreadPoolExecutor:
    with _lock:
        pool: ThreadPoolExecutor | None = _state.get("pool")
        if pool is None or _state.get("pool_size", 0) < workers:
            if pool is not None:
                pool.shutdown(wait=True)
            pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sparsedebug-kernel")
            _state["pool"] = pool
            _state["pool_size"] = workers
        return pool


def split(count: int, workers: int) -> list[tuple[int, int]]:
    """Cut ``range(count)`` into ``workers`` contiguous, near-equal ``(start, stop)`` spans."""
    workers = max(1, min(workers, count))
    bounds = [count * i // workers for i in range(workers + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(workers)]


def run_pieces(count: int, body: Callable[[int, int, int], None], workers: int | None = None) -> None:
    """Run ``body(worker, start, stop)`` over contiguous spans of ``range(count)``.

    ``workers`` defaults to the BLAS thread count. With more than one worker the
    spans run on a persistent thread pool while BLAS is limited to one thread.
    """
    wanted = blas_threads() if workers is None else workers
    spans = split(count, wanted)
    if len(spans) == 1:
        body(0, 0, count)
        return
    pool = _pool(len(spans))
    with _controller().limit(limits=1):
        futures = [pool.submit(body, worker, start, stop) for worker, (start, stop) in enumerate(spans)]
        for future in futures:
            future.result()
