"""Start-up cost of `sparsedebug --version` and of every `--help` against importing its core libraries.

Each variant runs in a fresh process; rounds are interleaved (every variant once per round,
the order rotating) so drift on a shared machine hits them alike. Prints p50/p95/p99 of each
and the ratio of its median to the median of the bare imports (``import numpy, pydantic,
typer, rich, yaml``; target: at most 1.5x for every `--help`).

Usage: python benchmarks/startup.py [ROUNDS]
"""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np

TARGET = 1.5
"""Most a `--help` may cost, as a multiple of the bare imports."""


def help_commands() -> list[list[str]]:
    """Every command path: the top level, each command, and each subcommand of a group."""
    import typer

    from sparsedebug.cli.app import app

    root = typer.main.get_command(app)
    paths: list[list[str]] = [[]]
    ctx = typer.Context(root)
    for name in root.list_commands(ctx):  # type: ignore[attr-defined]
        command = root.get_command(ctx, name)  # type: ignore[attr-defined]
        paths.append([name])
        if hasattr(command, "list_commands"):  # a group: its subcommands too
            paths.extend([name, sub] for sub in command.list_commands(ctx))
    return paths


def variants() -> dict[str, list[str]]:
    """Name -> command line of every timed variant, the bare imports first."""
    python = [sys.executable]
    table = {
        "bare imports": [*python, "-c", "import numpy, pydantic, typer, rich, yaml"],
        "--version": [*python, "-m", "sparsedebug", "--version"],
    }
    for path in help_commands():
        table[" ".join([*path, "--help"])] = [*python, "-m", "sparsedebug", *path, "--help"]
    return table


def main() -> None:
    """Time every variant in interleaved rounds (rotating which goes first) and print the table."""
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    table = variants()
    names = list(table)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for i in range(rounds):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            subprocess.run(table[name], check=True, capture_output=True, env={**_env(), "COLUMNS": "100"})
            samples[name].append(time.perf_counter() - start)
    base = float(np.median(samples["bare imports"]))
    print(f"{'variant':<26} {'p50 s':>7} {'p95 s':>7} {'p99 s':>7} {'ratio':>7}")
    worst = 0.0
    for name, values in samples.items():
        p50, p95, p99 = np.percentile(values, [50, 95, 99])
        ratio = float(np.median(values)) / base
        if name.endswith("--help"):
            worst = max(worst, ratio)
        print(f"{name:<26} {p50:7.3f} {p95:7.3f} {p99:7.3f} {ratio:6.2f}x")
    verdict = "within" if worst <= TARGET else "OVER"
    print(f"worst --help: {worst:.2f}x the bare imports ({verdict} the {TARGET}x target), {rounds} interleaved rounds, medians")


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
