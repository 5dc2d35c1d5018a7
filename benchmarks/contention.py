"""Does the timing harness notice a competitor that holds a core for the whole measurement?

Runs ``sparsedebug bench kernel`` (one row; ``--shape``, ``--tokens``, ``--rounds``) RUNS times
quiet and RUNS times with a planted competitor: a process spinning on one core (as
``yes > /dev/null``) from before the command starts until it ends. Quiet and planted runs
alternate; ``--quiet-only`` runs the quiet ones alone (to check that a quiet machine stays
``stable``). Prints, per run, the row's timing status, the cores the harness saw other
processes keep busy (``competing_cores``) and the share of its time they held the spare
cores, the blocked kernel's ratio to its limit, and what the machine did meanwhile: the
cores busy with anything but the command (``/proc/stat`` minus the command's own CPU time)
and the 1-minute load average after the run; then how many runs of each kind were
``unstable``. Target: every planted run unstable, at least 9 of 10 quiet runs stable (on a
machine that is quiet apart from the plant: other load counts as contention too, and the
harness says so; the machine column tells such runs apart).

Usage: python benchmarks/contention.py [--runs 10] [--quiet-only] [--shape 2048x2048] [--tokens 512] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from sparsedebug.core.noise import machine_cpu

SPIN = "while True:\n    pass\n"


def bench(args: argparse.Namespace) -> dict[str, object]:
    """One `bench kernel --json` row."""
    command = [sys.executable, "-m", "sparsedebug", "bench", "kernel", "--shape", args.shape, "--tokens", str(args.tokens),
               "--rounds", str(args.rounds), "--json"]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    row: dict[str, object] = json.loads(out)[0]
    return row


def children_cpu() -> float:
    """CPU seconds of this script's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    """Alternate quiet and planted runs (or quiet runs alone); print each and the counts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--quiet-only", action="store_true", help="only quiet runs (no planted competitor)")
    parser.add_argument("--shape", default="2048x2048")
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    kinds = ["quiet"] * args.runs if args.quiet_only else ["quiet", "planted"] * args.runs
    unstable = {"quiet": 0, "planted": 0}
    print(f"{'run':<10} {'status':<9} {'competing cores':>15} {'of the time':>11} {'vnm / limit':>11} "
          f"{'machine others':>14}  load1")
    for i, kind in enumerate(kinds):
        spinner = subprocess.Popen([sys.executable, "-c", SPIN]) if kind == "planted" else None
        try:
            if spinner is not None:
                time.sleep(0.5)  # the competitor holds its core before the measurement starts
            before = (time.perf_counter(), children_cpu(), machine_cpu())
            row = bench(args)
            after = (time.perf_counter(), children_cpu(), machine_cpu())
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
        timing = row["timing"]
        assert isinstance(timing, dict)
        unstable[kind] += timing["status"] == "unstable"
        cores, share = timing.get("competing_cores"), timing.get("contended_share")
        shown = "-" if cores is None else f"{cores:.2f}"
        held = "-" if share is None else f"{share:.0%}"
        others = "-"
        if before[2] is not None and after[2] is not None:
            wall = after[0] - before[0]
            others = f"{max(0.0, (after[2][0] - before[2][0] - (after[1] - before[1])) / wall):.2f}"
        number = i // (1 if args.quiet_only else 2) + 1
        print(f"{kind + ' ' + str(number):<10} {timing['status']:<9} {shown:>15} {held:>11} {row['vnm_vs_limit']:>10.2f}x "
              f"{others:>14}  {os.getloadavg()[0]:.1f}")
    counts = [f"quiet {args.runs - unstable['quiet']} of {args.runs} stable"]
    if not args.quiet_only:
        counts.insert(0, f"planted {unstable['planted']} of {args.runs} unstable")
    print("; ".join(counts))


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
