"""Validate the H200 target cost model against its own measurements.

0. Held out by whole shapes and token decades: every measured GPU time (dense and
   2:4), one shape or one token decade at a time dropped, the model rebuilt without
   it, the group projected: median and worst error per grouping and path, and the
   share of held-out points whose 90% interval contains the measurement (target:
   80% to 95%).
1. Leave-one-out over the 50 timed ``results.json`` gemm rows (cuSPARSELt, fp16 and
   bf16): rebuild the model without every measurement at a row's point, project that
   row's eager per-call dense and sparse time, and report |projected / measured - 1|
   (target: median at most 15%; the worst row is printed).
2. Whole forwards of the traced 4-block Llama at 2,048 tokens (dense and sparse-MLP,
   eager and CUDA graph) against the measured p50 of ``results.json`` ``model`` and
   of the fixture README (target: within 25%).

Nothing is timed: this checks a model of another machine. Usage:
``python benchmarks/target_validation.py [PROFILE]``; exit 1 when a target is missed.
"""

from __future__ import annotations

import sys
from collections import Counter

from sparsedebug.core.stats import median
from sparsedebug.sources.target.validate import HeldOutPoint, forward_checks, held_out, leave_one_out, summary, trace_checks

LOO_TARGET = 0.15
FORWARD_TARGET = 0.25
COVERAGE_TARGET = (0.80, 0.95)


def _held_out_table(profile: str) -> bool:
    """Print the held-out validation table; True when the coverage is within the target."""
    result = held_out(profile)
    print(f"held out by whole shapes and token decades ({profile}, GPU time per call, 90% intervals):")
    print(f"  {'grouping':<14} {'path':<7} {'n':>4} {'median err':>11} {'worst err':>10}  {'coverage':>8}  worst point")

    def line(label: str, path: str, pts: list[HeldOutPoint]) -> None:
        worst = max(pts, key=lambda p: p.error)
        cover = sum(p.covered for p in pts) / len(pts)
        where = f"{worst.shape[0]}x{worst.shape[1]} T={worst.tokens} {worst.dtype} ({worst.group} held out)" if path != "all" else ""
        print(f"  {label:<14} {path:<7} {len(pts):>4} {median([p.error for p in pts]):>10.1%} {worst.error:>10.1%}  {cover:>8.1%}  {where}")

    for grouping in ("shape", "token decade"):
        for path in ("dense", "sparse"):
            pts = [p for p in result.points if p.grouping == grouping and p.path == path]
            if pts:
                line(grouping, path, pts)
    for path, grouping, group in result.untestable:
        print(f"  {grouping:<14} {path:<7} not testable: {group}: the model held out without it has no figure for this path")
    line("all", "all", result.points)
    coverage = sum(p.covered for p in result.points) / len(result.points)
    ok = COVERAGE_TARGET[0] <= coverage <= COVERAGE_TARGET[1]
    print(f"  coverage {coverage:.1%} of {len(result.points)} held-out points (target {COVERAGE_TARGET[0]:.0%} to {COVERAGE_TARGET[1]:.0%}): {'ok' if ok else 'MISSED'}\n")
    return ok


def main() -> int:
    """Print both validations and return the exit status."""
    profile = sys.argv[1] if len(sys.argv) > 1 else "h200-cusparselt"
    covered = _held_out_table(profile)
    errors = leave_one_out(profile)
    med, worst = summary(errors)
    rows = len({e.row for e in errors})
    print(f"leave-one-out over {rows} timed gemm rows of {profile} ({len(errors)} projections, eager per-call p50):")
    for path in ("dense", "sparse"):
        values = [e.error for e in errors if e.path == path]
        print(f"  {path:<6} median error {median(values):6.1%}  worst {max(values):6.1%}  (n={len(values)})")
    bases = Counter(e.basis for e in errors)
    print(f"  all    median error {med:6.1%}  (target <= {LOO_TARGET:.0%}); bases of the left-out projections: {dict(bases)}")
    print(
        f"  worst: gemm[{worst.row}] {worst.shape[0]}x{worst.shape[1]} T={worst.tokens} {worst.dtype} {worst.path}: "
        f"measured {worst.measured_ms:.4f} ms, projected {worst.projected_ms:.4f} ms ({worst.error:.1%}, {worst.basis})"
    )
    ok = covered and med <= LOO_TARGET
    print("\nwhole forward, 4-block Llama at 2,048 tokens (target clock, projected vs measured p50 on the H200):")
    for check in forward_checks(profile):
        if check.projected_ms is None or check.error is None:
            print(f"  {check.workload:<24} {check.launch:<10} measured {check.measured_ms:7.3f} ms  projected n/a")
            ok = False
            continue
        verdict = "ok" if check.error <= FORWARD_TARGET else "MISSED"
        ok = ok and check.error <= FORWARD_TARGET
        print(
            f"  {check.workload:<24} {check.launch:<10} measured {check.measured_ms:7.3f} ms  projected {check.projected_ms:7.3f} ms  "
            f"error {check.projected_ms / check.measured_ms - 1:+6.1%} {verdict}  [{check.source}]"
        )
    print("\nreference only (the traces also calibrate the model): the profiled forwards, median iteration latency:")
    for check in trace_checks(profile):
        if check.projected_ms is not None:
            print(
                f"  {check.workload:<24} {check.launch:<10} traced   {check.measured_ms:7.3f} ms  projected {check.projected_ms:7.3f} ms  "
                f"error {check.projected_ms / check.measured_ms - 1:+6.1%}  [{check.source}]"
            )
    print(f"\n{'all targets met' if ok else 'a target was missed'}")
    return 0 if ok else 1


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
