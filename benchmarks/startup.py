"""Start-up cost of `sparsedebug --version` against importing its core libraries, side by side.

Interleaved rounds in fresh processes; prints p50/p95/p99 of each and the ratio of the
medians (target: at most 1.5x). Usage: python benchmarks/startup.py [ROUNDS]
"""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np

VARIANTS = {
    "core imports": [sys.executable, "-c", "import numpy, pydantic, typer, rich, yaml"],
    "sparsedebug --version": [sys.executable, "-m", "sparsedebug", "--version"],
}


def main() -> None:
    """Time both variants in interleaved rounds (rotating which goes first) and print the table."""
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for i in range(rounds):
        for name in names[i % 2:] + names[: i % 2]:
            start = time.perf_counter()
            subprocess.run(VARIANTS[name], check=True, capture_output=True)
            samples[name].append(time.perf_counter() - start)
    print(f"{'variant':<24} {'p50 s':>8} {'p95 s':>8} {'p99 s':>8}")
    for name, values in samples.items():
        p50, p95, p99 = np.percentile(values, [50, 95, 99])
        print(f"{name:<24} {p50:8.3f} {p95:8.3f} {p99:8.3f}")
    ratio = float(np.median(samples["sparsedebug --version"]) / np.median(samples["core imports"]))
    print(f"ratio of medians: {ratio:.2f}x (target <= 1.5x), {rounds} interleaved rounds")


if __name__ == "__main__":
    main()
