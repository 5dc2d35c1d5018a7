"""A/A check: replay one workload twice, many times, and count how often bisect or gate call a difference.

Two replays of the same workload differ only by this machine's noise and drift, so every
divergence bisect reports and every speed or p99 check the gate fails is a false alarm.
The script prints, per pair, the raw candidate/baseline latency ratio (what a comparison
that ignores the machine would see), the shared dense forward's ratio (the machine's own
drift between the two replays), the bisect state and the gate's speed and p99 verdicts, then
the false-alarm counts. Usage::

    python benchmarks/aa_replays.py [WORKLOAD] [--pairs 10] [--repeats 15] [--threads N]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sparsedebug.core.stats import median
from sparsedebug.locate.walk import bisect_runs
from sparsedebug.signoff.gate import evaluate
from sparsedebug.sources.detect import load_workload, resolve_workload
from sparsedebug.sources.replay.replay import replay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", nargs="?", default="llama_2of4")
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=None, help="override the workload's BLAS threads")
    args = parser.parse_args()
    path = resolve_workload(args.workload)
    workload = load_workload(path)
    if args.threads is not None:
        workload = workload.model_copy(update={"threads": args.threads})
    alarms = {"bisect": 0, "effective_speedup": 0, "p99_latency": 0}
    print(f"{'pair':>4}  {'raw p50 ratio':>13}  {'dense ref ratio':>15}  {'bisect':<24}  speed  p99")
    for pair in range(args.pairs):
        base = replay(workload, repeats=args.repeats, source_path=Path(path))
        cand = replay(workload, repeats=args.repeats, source_path=Path(path))
        raw = median(cand.outcome.latency_samples_ms) / median(base.outcome.latency_samples_ms)
        ref = median(cand.outcome.dense_baseline_samples_ms or [1.0]) / median(base.outcome.dense_baseline_samples_ms or [1.0])
        result = bisect_runs(base, cand)
        checks = {check.id: check for check in evaluate(base, cand).checks}
        gate = {name: check.status for name, check in checks.items()}
        if result.state == "divergence":
            alarms["bisect"] += 1
        for check in ("effective_speedup", "p99_latency"):
            alarms[check] += gate[check] == "fail"
        state = f"{result.state} {result.first_stage or ''}".strip()
        print(f"{pair:>4}  {raw:>13.3f}  {ref:>15.3f}  {state:<24}  {gate['effective_speedup']:<5}  {gate['p99_latency']}")
        if result.state == "divergence":
            print(f"      bisect: {result.verdict[:200]}")
        for name in ("effective_speedup", "p99_latency"):
            if gate[name] == "fail":
                print(f"      {name}: {checks[name].detail.split('; baseline p50')[0][:160]}")
    print(
        f"false alarms in {args.pairs} A/A pairs: bisect {alarms['bisect']}, "
        f"speed {alarms['effective_speedup']}, p99 {alarms['p99_latency']}"
    )


if __name__ == "__main__":
    main()
