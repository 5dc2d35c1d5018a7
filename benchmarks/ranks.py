"""Run-set import: wall time and peak memory per worker against the number of ranks, local processes vs Dask.

Generates one job of ``max(--ranks)`` ranks of about ``--events`` events each (``tests.support.ranksets``
with a planted straggler), then for each rank count (the first N ranks) and each executor parses the set
(``sparsedebug.sources.runset.parse``) and records the wall time and the peak RSS of every worker process
(``ru_maxrss`` read inside the worker after its rank, against the same worker's RSS before any rank: the
difference is what parsing one rank costs). Executors: ``local`` (a process pool of 2) and a Dask
``LocalCluster`` of 2 single-threaded worker processes (when ``distributed`` is installed). Rounds are
interleaved (executor and rank count alternate within a round); the table shows medians over rounds and the
growth exponent d log(wall) / d log(ranks) between consecutive counts (1.0: linear in ranks) and of the
per-worker peak (0.0: independent of the rank count). Usage::

    python benchmarks/ranks.py [--ranks 8,32,128] [--events 20000] [--rounds 1]
"""

from __future__ import annotations

import argparse
import math
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from sparsedebug.locate.ranks import straggler
from sparsedebug.records.ranks import RankSummary
from sparsedebug.sources.runset.discover import RankFile, discover
from sparsedebug.sources.runset.parse import open_executor
from sparsedebug.sources.runset.summarize import summarize
from tests.support.ranksets import write_rank_set
from tests.support.tracegen import spec_for_events


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _baseline(_: int) -> float:
    """A worker's peak RSS before it parses anything (MiB)."""
    return _rss_mib()


def _measured(member: RankFile) -> tuple[RankSummary, float]:
    """One rank's summary and the worker's peak RSS after it (MiB)."""
    summary = summarize(member)
    return summary, _rss_mib()


def run(members: list[RankFile], spec: str) -> tuple[float, float, float, int | None]:
    """Wall seconds, median worker idle RSS, max worker peak RSS (MiB), and the straggler found."""
    from sparsedebug.records.ranks import RankSet

    with open_executor(spec, len(members)) as (pool, described):
        idle = [f.result() for f in [pool.submit(_baseline, i) for i in range(2)]]
        start = time.perf_counter()
        results = [f.result() for f in [pool.submit(_measured, m) for m in members]]
        wall = time.perf_counter() - start
    found = straggler(RankSet(source="bench", ranks=[s for s, _ in results], executor=described))
    return wall, statistics.median(idle), max(peak for _, peak in results), found.rank if found else None


def _exponent(xs: list[float], ys: list[float]) -> list[str]:
    out = ["-"]
    for (x0, y0), (x1, y1) in zip(zip(xs, ys, strict=True), list(zip(xs, ys, strict=True))[1:], strict=False):
        out.append(f"{math.log(y1 / y0) / math.log(x1 / x0):.2f}" if y0 > 0 and y1 > 0 else "-")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", default="8,32,128")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    counts = sorted(int(n) for n in args.ranks.split(","))
    spec = spec_for_events(args.events)
    executors = ["local"]
    cluster = None
    try:
        from distributed import LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)  # type: ignore[no-untyped-call]
        executors.append(f"dask://{cluster.scheduler_address.removeprefix('tcp://')}")
    except ImportError:
        print("Dask distributed not installed: local processes only", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "job"
        started = time.perf_counter()
        write_rank_set(folder, counts[-1], seed=1, straggler=counts[-1] // 3, iterations=spec.iterations)
        print(f"generated {counts[-1]} ranks of ~{args.events} events in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        members = discover([str(folder)])
        rows: dict[tuple[str, int], list[tuple[float, float, float, int | None]]] = {}
        for _ in range(args.rounds):
            for n in counts:
                for executor in executors:
                    rows.setdefault((executor, n), []).append(run(members[:n], executor))
                    print(f"  {executor.split(':')[0]} {n} ranks done", file=sys.stderr)
    if cluster is not None:
        cluster.close()
    print(f"| executor | ranks | wall s (median of {args.rounds}) | ms per rank | worker idle MiB | worker peak MiB | "
          "growth d log t / d log ranks | growth of worker peak | straggler |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for executor in executors:
        walls = [statistics.median(r[0] for r in rows[(executor, n)]) for n in counts]
        peaks = [statistics.median(r[2] for r in rows[(executor, n)]) for n in counts]
        for i, n in enumerate(counts):
            idle = statistics.median(r[1] for r in rows[(executor, n)])
            found = rows[(executor, n)][0][3]
            name = "local processes (2)" if executor == "local" else "Dask LocalCluster (2)"
            print(f"| {name} | {n} | {walls[i]:.2f} | {walls[i] / n * 1e3:.0f} | {idle:.0f} | {peaks[i]:.0f} | "
                  f"{_exponent([float(c) for c in counts], walls)[i]} | {_exponent([float(c) for c in counts], peaks)[i]} | "
                  f"{'-' if found is None else found} (planted {counts[-1] // 3 if counts[-1] // 3 < n else 'outside'}) |")


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
