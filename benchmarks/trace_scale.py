"""Time and peak memory of every trace command on generated pairs of growing size: is the growth linear?

For each size (events per trace, default 25k/50k/100k/200k) a dense baseline and
a 2:4 candidate with per-call host cost are generated (``tests.support.tracegen``, 24
layers x 2 calls, the iteration count scaled to the size, or ``--grow calls``
for more calls per layer). Every command (``import trace``, ``fallbacks``,
``bisect``, ``classify -b``, ``gate``, ``playbook run``) runs in its own
subprocess, sizes interleaved within each round; the table shows the median wall
time and peak RSS (VmHWM) over the rounds, the ratio to the smallest size, and
the growth exponent d log t / d log events between consecutive sizes (1.0 is
linear; start-up time pulls it below 1 at small sizes). Usage::

    python benchmarks/trace_scale.py [--sizes 25000,50000,100000,200000] [--rounds 3] [--grow iterations|calls]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from corpus import run_cli

from tests.support.tracegen import TraceSpec, generate, spec_for_events, write_trace


def make_pair(directory: Path, events: int, grow: str) -> tuple[Path, Path, int]:
    """A dense -> 2:4 pair of about ``events`` events each; returns the paths and the exact event count."""
    if grow == "calls":
        probe = TraceSpec(layers=24, calls=1, iterations=8, seed=11)
        fixed = generate(probe)[1].events
        per_call = generate(replace(probe, calls=2))[1].events - fixed
        spec = replace(probe, calls=max(1, round((events - fixed) / per_call) + 1))
    else:
        spec = spec_for_events(events, layers=24, calls=2, seed=11)
    cand = replace(spec, sparse_layers=frozenset(range(0, 24, 2)), sparse_host_us=200.0, seed=12)
    base_path, cand_path = directory / f"a_{events}.json.gz", directory / f"b_{events}.json.gz"
    truth = write_trace(base_path, spec)
    write_trace(cand_path, cand)
    return base_path, cand_path, truth.events


def commands(a: Path, b: Path, work: Path) -> dict[str, list[str]]:
    """The commands timed on one pair (``work`` is a fresh directory per run: a bundle is never written over another)."""
    return {
        "import trace": ["import", "trace", str(a), "--json"],
        "fallbacks": ["fallbacks", str(a), str(b)],
        "bisect": ["bisect", str(a), str(b)],
        "classify -b": ["classify", str(b), "--baseline", str(a)],
        "gate": ["gate", str(a), str(b)],
        "playbook run": ["playbook", "run", "--baseline", str(a), "--candidate", str(b), "-o", str(work / "bundle")],
    }


def exponent(t0: float, t1: float, e0: int, e1: int) -> float:
    """Growth exponent between two sizes: log(t1 / t0) / log(e1 / e0)."""
    return math.log(t1 / t0) / math.log(e1 / e0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="25000,50000,100000,200000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--grow", choices=("iterations", "calls"), default="iterations")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="trace-scale-") as tmp:
        root = Path(tmp)
        pairs = {size: make_pair(root, size, args.grow) for size in sizes}
        wall: dict[tuple[str, int], list[float]] = {}
        peak: dict[tuple[str, int], list[float]] = {}
        failures: list[str] = []
        for _ in range(args.rounds):
            for size in sizes:  # interleaved: every size once per round
                a, b, _events = pairs[size]
                work = Path(tempfile.mkdtemp(prefix="run-", dir=root))
                for label, argv in commands(a, b, work).items():
                    code, seconds, mb, _out, err = run_cli(argv, args.timeout)
                    if code not in (0, 1) or "Traceback" in err:
                        failures.append(f"{label} at {size}: exit {code}: {err.strip().splitlines()[-1] if err.strip() else ''}")
                        continue  # a failed run is reported, never tabulated
                    wall.setdefault((label, size), []).append(seconds)
                    peak.setdefault((label, size), []).append(mb)
    print(f"pairs of generated training traces, growing {args.grow}; median of {args.rounds} interleaved round(s)")
    print(f"events per trace: {', '.join(str(pairs[s][2]) for s in sizes)}")
    labels = list(commands(Path("a"), Path("b"), Path(".")))
    print(f"{'command':<14}" + "".join(f"{f'{s // 1000}k s':>9}{'MB':>6}" for s in sizes) + f"{'x vs first':>11}{'exponent (last step)':>22}")
    worst = 0.0
    for label in labels:
        if any((label, s) not in wall for s in sizes):
            print(f"{label:<14}  not tabulated: it failed at " + ", ".join(f"{s // 1000}k" for s in sizes if (label, s) not in wall))
            continue
        t = [statistics.median(wall[(label, s)]) for s in sizes]
        m = [max(peak[(label, s)]) for s in sizes]
        exp = exponent(t[-2], t[-1], pairs[sizes[-2]][2], pairs[sizes[-1]][2]) if len(sizes) > 1 else float("nan")
        worst = max(worst, max(t))
        cells = "".join(f"{ti:>9.2f}{mi:>6.0f}" for ti, mi in zip(t, m, strict=True))
        print(f"{label:<14}{cells}{t[-1] / t[0]:>11.2f}{exp:>22.2f}")
    print(f"slowest command at the largest size: {worst:.2f} s; failures: {failures or 'none'}")


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
