"""Commands timed side by side: interleaved rounds of fresh processes, medians, p50/p95/p99, ratios, the load.

Each round runs every variant once, the order rotating from round to round, so drift on a
shared machine hits all of them alike. A variant is a command line and the environment it
adds (``PYTHONPATH`` names which tree of sparsedebug runs: this one or an old commit's
worktree). Every run's wall time and peak resident memory (``ru_maxrss`` of the child) are
kept, with the 1-minute load average seen at its start. Used by ``walk_figures.py`` and
``bisect_start.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Variant:
    """One command, the environment it adds, and what its runs measured."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = REPO
    seconds: list[float] = field(default_factory=list)
    rss_mib: list[float] = field(default_factory=list)


def tree(path: str) -> dict[str, str]:
    """The environment that makes ``python -m sparsedebug`` run the tree at ``path`` (run it with ``cwd=path`` too:
    ``-m`` puts the working directory first on ``sys.path``)."""
    return {"PYTHONPATH": path, "COLUMNS": "100"}


def run_once(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS (MiB, the child's own ``ru_maxrss`` from ``wait4``), exit status and the end of stderr."""
    with tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        child = subprocess.Popen(argv, env={**os.environ, **env}, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return seconds, usage.ru_maxrss / 1024.0, child.returncode, err.read()[-2000:]


def run_rounds(variants: list[Variant], rounds: int, *, check: bool = True) -> list[float]:
    """Run every variant once per round, the order rotating; returns the load average at each run's start."""
    loads: list[float] = []
    for i in range(rounds):
        shift = i % len(variants)
        for v in variants[shift:] + variants[:shift]:
            loads.append(os.getloadavg()[0])
            seconds, rss, code, stderr = run_once(v.argv, v.env, v.cwd)
            v.seconds.append(seconds)
            v.rss_mib.append(rss)
            if check and code not in (0, 1):
                raise SystemExit(f"{v.name}: exit {code}\n{stderr}")
    return loads


def table(variants: list[Variant], base: str, *, rss: bool = False) -> str:
    """p50/p95/p99 seconds of each variant and its median's ratio to ``base``'s median (and peak RSS when asked)."""
    ref = float(np.median(next(v for v in variants if v.name == base).seconds))
    head = f"{'variant':<44} {'p50 s':>7} {'p95 s':>7} {'p99 s':>7} {'ratio':>7}" + (f" {'max RSS MiB (p50)':>18}" if rss else "")
    lines = [head]
    for v in variants:
        p50, p95, p99 = np.percentile(v.seconds, [50, 95, 99])
        row = f"{v.name:<44} {p50:7.3f} {p95:7.3f} {p99:7.3f} {float(np.median(v.seconds)) / ref:6.2f}x"
        if rss:
            row += f" {float(np.median(v.rss_mib)):18.0f}"
        lines.append(row)
    return "\n".join(lines)


def load_line(loads: list[float]) -> str:
    """The 1-minute load average over the runs: min, median, max, against the logical cores."""
    return (f"load average (1 min) at the runs' starts: min {min(loads):.2f}, median {float(np.median(loads)):.2f}, "
            f"max {max(loads):.2f} on {os.cpu_count()} logical cores")


def python() -> str:
    """This interpreter."""
    return sys.executable
