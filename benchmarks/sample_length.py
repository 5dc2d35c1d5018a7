"""How steady a paired round is, by how its samples are taken: the evidence behind ``records.defaults.MIN_SAMPLE_MS``.

Prepares the candidate forward of one workload twice (two instances, as an A/A session has
them: baseline and candidate) with one BLAS thread and times, in rounds of the session's
order (each side's dense reference right before it, the sides swapping every round), the
per-round log ratio of the two sides' samples, three ways:

``one call``      each sample one call (the design before ``MIN_SAMPLE_MS``)
``blocked K``     each sample K calls of one side back to back, then K of the next
``alternating K`` K passes through the round's order, each call added to its side's sample
                  (what ``core.timing.measure`` does with ``min_sample_ms``)

K is the calls that make the fastest forward last ``--min-sample-ms`` (default the
project's). Trials of ``--rounds`` rounds run interleaved across the three ways (one
trial of each in turn), and the table gives, per way, the median over trials of the
per-round log-ratio spread (standard deviation) and of the largest |median| a trial
showed: an A/A pair's ratio is 1, so both are noise. Usage::

    python benchmarks/sample_length.py [--workload fixtures/workloads/planted/base.yaml] [--trials 6] [--rounds 15]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from threadpoolctl import threadpool_limits

from sparsedebug.records.defaults import MIN_SAMPLE_MS
from sparsedebug.sources.detect import load_workload, resolve_workload
from sparsedebug.sources.replay.sources import graph_source

ROOT = Path(__file__).resolve().parents[1]
Call = Callable[[], object]


def forwards(path: Path) -> tuple[Call, Call, Call, Call]:
    """Two prepared instances of the workload: (baseline dense, baseline, candidate dense, candidate)."""
    workload = load_workload(path)
    made = []
    for _ in range(2):
        prepared = graph_source(workload, path.parent).prepare(lambda *a: None)
        prepared.lower(3)
        made.append(prepared.forwards())
    return made[0].dense, made[0].candidate, made[1].dense, made[1].candidate


def trial(calls: tuple[Call, Call, Call, Call], rounds: int, way: str, k: int) -> list[float]:
    """Per-round log ratio candidate / baseline of one trial taken ``way``."""
    clock = time.perf_counter
    ratios = []
    for r in range(rounds):
        order = (0, 1, 2, 3) if r % 2 == 0 else (2, 3, 0, 1)
        spent = [0.0] * 4
        if way == "alternating":
            for _ in range(k):
                for i in order:
                    start = clock()
                    calls[i]()
                    spent[i] += clock() - start
        else:
            n = 1 if way == "one call" else k
            for i in order:
                start = clock()
                for _ in range(n):
                    calls[i]()
                spent[i] = clock() - start
        ratios.append(math.log(spent[3] / spent[1]))
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default=str(ROOT / "fixtures/workloads/planted/base.yaml"))
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--min-sample-ms", type=float, default=MIN_SAMPLE_MS)
    args = parser.parse_args()
    path = Path(args.workload) if Path(args.workload).exists() else resolve_workload(args.workload)
    with threadpool_limits(limits=1):
        calls = forwards(path)
        for call in calls:
            call()
        one = math.inf
        for _ in range(5):  # the fastest of the compared calls, as core.timing.calls_per_sample sets K
            for call in (calls[1], calls[3]):
                start = time.perf_counter()
                call()
                one = min(one, (time.perf_counter() - start) * 1000.0)
        k = max(1, math.ceil(args.min_sample_ms / one))
        ways = ["one call", "blocked", "alternating"]
        spreads: dict[str, list[float]] = {w: [] for w in ways}
        offsets: dict[str, list[float]] = {w: [] for w in ways}
        for _ in range(args.trials):
            for way in ways:
                ratios = trial(calls, args.rounds, way, k)
                spreads[way].append(statistics.pstdev(ratios))
                offsets[way].append(abs(statistics.median(ratios)))
    print(f"{path.name}: one forward {one:.3f} ms, K = {k} calls a sample (>= {args.min_sample_ms:g} ms), "
          f"{args.trials} trials of {args.rounds} rounds each way, one BLAS thread")
    print("| way | per-round log-ratio spread: median (min-max) over trials | largest trial |median| |")
    print("| --- | --- | --- |")
    for way in ways:
        label = way if way == "one call" else f"{way} {k}"
        sd = spreads[way]
        print(f"| {label} | {statistics.median(sd):.3f} ({min(sd):.3f}-{max(sd):.3f}) | {max(offsets[way]):.3f} |")


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
