"""Does the timing harness notice a competitor that holds a core for the whole measurement?

Runs ``sparsedebug bench kernel`` (one row; ``--shape``, ``--tokens``, ``--rounds``) RUNS times
quiet and RUNS times with a planted competitor: a process spinning on one core (as
``yes > /dev/null``) from before the command starts until it ends. Quiet and planted runs
alternate. Prints, per run, the row's timing status, the cores the harness saw other
processes keep busy (``competing_cores``) and the blocked kernel's ratio to its limit, then
how many runs of each kind were ``unstable``. Target: every planted run unstable, at least
9 of 10 quiet runs stable (on a machine that is quiet apart from the plant: other load
counts as contention too, and the harness says so).

Usage: python benchmarks/contention.py [--runs 10] [--shape 2048x2048] [--tokens 512] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

SPIN = "while True:\n    pass\n"


def bench(args: argparse.Namespace) -> dict[str, object]:
    """One `bench kernel --json` row."""
    command = [sys.executable, "-m", "sparsedebug", "bench", "kernel", "--shape", args.shape, "--tokens", str(args.tokens),
               "--rounds", str(args.rounds), "--json"]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    row: dict[str, object] = json.loads(out)[0]
    return row


def main() -> None:
    """Alternate quiet and planted runs; print each and the counts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--shape", default="2048x2048")
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    unstable = {"quiet": 0, "planted": 0}
    print(f"{'run':<10} {'status':<9} {'competing cores':>15} {'vnm / limit':>11}  load1")
    for i in range(2 * args.runs):
        kind = "quiet" if i % 2 == 0 else "planted"
        spinner = subprocess.Popen([sys.executable, "-c", SPIN]) if kind == "planted" else None
        try:
            if spinner is not None:
                time.sleep(0.5)  # the competitor holds its core before the measurement starts
            row = bench(args)
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
        timing = row["timing"]
        assert isinstance(timing, dict)
        unstable[kind] += timing["status"] == "unstable"
        cores = timing.get("competing_cores")
        shown = "-" if cores is None else f"{cores:.2f}"
        print(f"{kind + ' ' + str(i // 2 + 1):<10} {timing['status']:<9} {shown:>15} {row['vnm_vs_limit']:>10.2f}x  {os.getloadavg()[0]:.1f}")
    print(f"unstable: planted {unstable['planted']} of {args.runs}, quiet {unstable['quiet']} of {args.runs}")


if __name__ == "__main__":
    main()
