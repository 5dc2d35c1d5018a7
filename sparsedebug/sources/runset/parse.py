"""Parse a run set: ``summarize`` mapped over the ranks through an Executor, reduced to a ``RankSet``.

Executors (``--executor``):

- ``local`` (default): a ``ProcessPoolExecutor`` of at most ``min(ranks, CPUs, MAX_LOCAL_WORKERS)``
  processes; each parses one rank at a time, so peak memory is workers x one rank's parse;
- ``inprocess``: no pool (small sets, debugging);
- ``dask://HOST:PORT`` (or ``tcp://HOST:PORT``) or the path of a Dask scheduler file: an existing
  Dask distributed cluster through ``Client.get_executor()`` (the optional ``dask`` extra:
  ``pip install 'sparsedebug[dask]'``). Workers must be able to read the trace paths.

Only the summaries travel back; no process holds the events of two ranks at once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sparsedebug.core.errors import UserError
from sparsedebug.records.ranks import RankSet, RankSummary
from sparsedebug.sources.runset.discover import RankFile
from sparsedebug.sources.runset.executors import executor_kind
from sparsedebug.sources.runset.summarize import summarize

# Most local worker processes (each holds one rank's parse at a time).
MAX_LOCAL_WORKERS = 8

# ``on_rank(summary, done, total)``: called as each rank's summary arrives (for a progress bar).
OnRank = Callable[[RankSummary, int, int], None]


class _InProcess(Executor):
    """An Executor that runs each call at submit time (``inprocess``)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the caller through the future, as a pool would
            future.set_exception(exc)
        return future


def _dask_client(spec: str) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise UserError(f"--executor {spec}: Dask distributed is not installed; pip install 'sparsedebug[dask]'") from None
    address = spec.removeprefix("dask://")
    try:
        if Path(address).is_file():
            return Client(scheduler_file=address, timeout=30)  # type: ignore[no-untyped-call]
        return Client(address if "://" in address else f"tcp://{address}", timeout=30)  # type: ignore[no-untyped-call]
    except OSError as exc:
        raise UserError(f"--executor {spec}: cannot reach the Dask scheduler ({exc})") from None


@contextmanager
def open_executor(spec: str, ranks: int) -> Iterator[tuple[Executor, str]]:
    """The executor an ``--executor`` value names, and how to describe it; closed on exit."""
    kind = executor_kind(spec)
    if kind == "inprocess":
        yield _InProcess(), "in process"
        return
    if kind == "local":
        workers = max(1, min(ranks, os.cpu_count() or 1, MAX_LOCAL_WORKERS))
        with ProcessPoolExecutor(max_workers=workers) as pool:
            yield pool, f"local processes ({workers} workers)"
        return
    client = _dask_client(spec)
    try:
        yield client.get_executor(), f"Dask distributed ({client.scheduler.address})"
    finally:
        client.close()


def parse_run_set(members: list[RankFile], source: str, *, executor: str = "local", on_rank: OnRank | None = None) -> RankSet:
    """Summarise every rank of a set through the named executor; the summaries in rank order."""
    with open_executor(executor, len(members)) as (pool, described):
        futures = {pool.submit(summarize, member): member for member in members}
        summaries: list[RankSummary] = []
        for done, future in enumerate(as_completed(futures), start=1):
            member = futures[future]
            try:
                summary = future.result()
            except UserError as exc:
                raise UserError(f"rank {member.rank}: {exc}") from None
            summaries.append(summary)
            if on_rank is not None:
                on_rank(summary, done, len(members))
    return RankSet(source=source, ranks=sorted(summaries, key=lambda s: s.rank), executor=described)
