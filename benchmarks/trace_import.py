"""`sparsedebug import trace` against a plain decode of the same file and HTA, side by side, and its growth with the file.

Generates a Kineto-style training trace with ``tests.support.tracegen`` (nested CPU ops,
forward/backward/optimizer, NCCL; about EVENTS events, >= 50 MB at the default) and its 2x
and 4x (twice and four times the iterations). Every variant runs as a whole process of its
own, as a user would run it (interpreter start and imports included), one untimed warm-up
each first; rounds are interleaved (every variant once per size and round, the order
rotating) so drift and load on a shared machine hit them alike. Wall time and CPU time (user +
system) come from the parent's ``wait4`` of each process, peak RSS from the process itself
(its ``VmHWM`` at exit: a forked child's ``ru_maxrss`` would include the parent's):

``import trace``  ``sparsedebug import trace FILE`` (the command: read, structure, analysis, tables)
``ours: library`` ``analyze_trace(FILE)`` alone (no tables)
``ours: read``    ``read_events(FILE)`` alone (the streamed decode and the per-event filing)
``json.load``     ``json.load`` of the whole document (no analysis at all)
``orjson``        ``orjson.loads`` of the file's bytes, where orjson is installed
``HTA``           Holistic Trace Analysis's temporal breakdown of the file (``TraceAnalysis`` on a
                  directory holding it as its one rank, ``get_temporal_breakdown``), with
                  ``--hta-python`` or ``$SPARSEDEBUG_HTA_PYTHON`` naming a Python where HTA is
                  installed (a throwaway venv: see benchmarks/hta_reference.py); at ``--hta-sizes``
                  only (default the 1x file: HTA takes about a minute per 50 MB here)

Ratios are medians over rounds of the ratio within a round: ``/ json.load`` (wall over
json.load's wall on the same file; ``(cpu)`` the same with CPU time, steadier when other
work shares the cores) and ``HTA /`` (HTA's wall over the variant's). The
growth exponent is d log(cpu time or peak memory) / d log(file size) between consecutive
sizes (1.0: linear). The targets of issue 32 are checked at the end: the command at most
1.3x json.load, at least 3x faster than HTA, at most 150 MiB, memory growing sub-linearly.

Usage: python benchmarks/trace_import.py [--events 200000] [--rounds 3] [--sizes 1,2,4]
       [--hta-python PATH] [--hta-sizes 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.support.tracegen import spec_for_events, write_trace

PEAK = (
    "import atexit, os\n"
    "atexit.register(lambda: os.write(2, ('\\nVmHWM ' + next(l.split()[1] for l in open('/proc/self/status') "
    "if l.startswith('VmHWM')) + '\\n').encode()))\n"
)
"""Reports the process's own peak RSS at exit (VmHWM: this program's, not the forking parent's, which ru_maxrss would include)."""
CLI = PEAK + "import sys\nsys.argv[0] = 'sparsedebug'\nfrom sparsedebug.cli.app import main\nmain()\n"
BODIES = {
    "import trace": None,  # the command itself (CLI above)
    "ours: library": "from sparsedebug.sources.importers.trace.importer import analyze_trace\nanalyze_trace(path)",
    "ours: read": "from sparsedebug.sources.importers.trace.read.events import read_events\nread_events(path)",
    "json.load": "with path.open() as f:\n    json.load(f)",
    "orjson": "import orjson\norjson.loads(path.read_bytes())",
}
HTA_BODY = (
    "import logging\nlogging.disable(logging.WARNING)\nfrom hta.trace_analysis import TraceAnalysis\n"
    "TraceAnalysis(trace_dir=str(path)).get_temporal_breakdown(visualize=False)"
)
"""HTA's temporal breakdown; ``path`` is a directory holding the file as ``rank-0.json`` (HTA reads a directory of ranks)."""

PROBE = PEAK + "import json, sys\nfrom pathlib import Path\npath = Path(sys.argv[1])\n{body}\n"

TARGET_JSON = 1.3
TARGET_HTA = 3.0
TARGET_PEAK_MIB = 150.0


def has_orjson() -> bool:
    """Whether this interpreter can import orjson."""
    try:
        import orjson  # noqa: F401
    except ImportError:
        return False
    return True


def command(python: str, name: str, body: str | None, path: Path) -> list[str]:
    """The argv of one variant on one file."""
    if body is None:
        return [python, "-c", CLI, "import", "trace", str(path)]
    return [python, "-c", PROBE.format(body=body), str(path)]


def run(argv: list[str]) -> dict[str, float]:
    """One process: wall seconds, CPU seconds (user + system, from wait4) and its peak RSS in MiB (its VmHWM at exit)."""
    env = {"PYTHONPATH": str(HERE.parent), "HTA_DISABLE_NS_ROUNDING": "1", "PATH": "/usr/bin:/bin"}
    start = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(argv, stdout=devnull, stderr=subprocess.PIPE, env=env)
        assert proc.stderr is not None
        err = proc.stderr.read()
        _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[2][:60]!r}... failed ({proc.returncode}):\n{err.decode(errors='replace')[-2000:]}")
    peak = next(line.split()[1] for line in reversed(err.decode(errors="replace").splitlines()) if line.startswith("VmHWM "))
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak_mib": int(peak) / 1024}


def exponent(a: float, b: float, size_a: float, size_b: float) -> float:
    """Growth exponent between two sizes."""
    import math

    return math.log(b / a) / math.log(size_b / size_a)


def load() -> str:
    """The 1, 5 and 15 minute load averages and the core count."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def main() -> None:
    """Generate the traces, time every variant interleaved, print the tables and the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="1,2,4")
    parser.add_argument("--hta-python", default=os.environ.get("SPARSEDEBUG_HTA_PYTHON"))
    parser.add_argument("--hta-sizes", default="1")
    args = parser.parse_args()
    factors = [int(f) for f in args.sizes.split(",")]
    hta_factors = {int(f) for f in args.hta_sizes.split(",")} if args.hta_python else set()
    variants: dict[str, tuple[str, str | None]] = {
        name: (sys.executable, body) for name, body in BODIES.items() if name != "orjson" or has_orjson()
    }
    if args.hta_python:
        variants["HTA"] = (args.hta_python, HTA_BODY)
    names = list(variants)
    print(load())
    with tempfile.TemporaryDirectory() as tmp:
        base = spec_for_events(args.events)
        files: dict[int, Path] = {}
        for factor in factors:
            files[factor] = Path(tmp) / f"trace_{factor}x.json"
            truth = write_trace(files[factor], replace(base, iterations=base.iterations * factor))
            print(f"{factor}x: {files[factor].stat().st_size / 1e6:.1f} MB, {truth.events} events")
            if factor in hta_factors:
                rank_dir = Path(tmp) / f"hta_{factor}x"
                rank_dir.mkdir()
                os.link(files[factor], rank_dir / "rank-0.json")

        def argv(name: str, factor: int) -> list[str]:
            python, body = variants[name]
            target = Path(tmp) / f"hta_{factor}x" if name == "HTA" else files[factor]
            return command(python, name, body, target)

        for name in names:  # warm-up: byte-compiled modules, the page cache
            run(argv(name, min(hta_factors) if name == "HTA" else factors[0]))
        results: dict[tuple[int, str], list[dict[str, float]]] = {}
        for r in range(args.rounds):
            for factor in factors:
                here = [n for n in names if n != "HTA" or factor in hta_factors]
                shift = r % len(here)
                for name in here[shift:] + here[:shift]:
                    results.setdefault((factor, name), []).append(run(argv(name, factor)))
            print(f"round {r + 1}/{args.rounds} done; {load()}", flush=True)
        sizes = {factor: files[factor].stat().st_size for factor in factors}
    _report(args.rounds, factors, names, results, sizes)


def _median(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(m[key] for m in rows)


def _ratio(results: dict[tuple[int, str], list[dict[str, float]]], factor: int, num: str, den: str, key: str = "wall") -> float | None:
    """Median over rounds of num's wall (or ``key``) over den's in the same round."""
    a, b = results.get((factor, num)), results.get((factor, den))
    if not a or not b:
        return None
    return statistics.median(x[key] / y[key] for x, y in zip(a, b, strict=False))


def _report(rounds: int, factors: list[int], names: list[str], results: dict[tuple[int, str], list[dict[str, float]]],
            sizes: dict[int, int]) -> None:
    print(f"\n{rounds} interleaved rounds, medians; a whole process per run (start-up and imports included)")
    print(f"{'file':<5} {'variant':<14} {'wall s':>7} {'cpu s':>7} {'peak MiB':>9} {'/ json.load':>12} {'(cpu)':>7} {'HTA /':>7}")
    for factor in factors:
        for name in names:
            rows = results.get((factor, name))
            if not rows:
                continue
            to_json = _ratio(results, factor, name, "json.load")
            to_json_cpu = _ratio(results, factor, name, "json.load", "cpu")
            hta = _ratio(results, factor, "HTA", name) if name != "HTA" else None
            print(f"{factor}x{'':<3} {name:<14} {_median(rows, 'wall'):7.2f} {_median(rows, 'cpu'):7.2f} {_median(rows, 'peak_mib'):9.0f} "
                  f"{to_json:11.2f}x {to_json_cpu:6.2f}x {'' if hta is None else f'{hta:6.1f}x':>7}")
    if len(factors) > 1:
        print("\ngrowth exponent (1.0 = linear) between consecutive sizes: time (cpu), peak memory")
        for name in names:
            parts = []
            for a, b in zip(factors, factors[1:], strict=False):
                if (a, name) not in results or (b, name) not in results:
                    continue
                ra, rb = results[(a, name)], results[(b, name)]
                parts.append(f"{a}x->{b}x time {exponent(_median(ra, 'cpu'), _median(rb, 'cpu'), sizes[a], sizes[b]):.2f}, "
                             f"memory {exponent(_median(ra, 'peak_mib'), _median(rb, 'peak_mib'), sizes[a], sizes[b]):.2f}")
            if parts:
                print(f"  {name:<14} " + "; ".join(parts))
    first = factors[0]
    checks = []
    to_json = _ratio(results, first, "import trace", "json.load")
    if to_json is not None:
        checks.append((f"import trace / json.load on the {first}x file {to_json:.2f}x (target <= {TARGET_JSON}x)", to_json <= TARGET_JSON))
    hta = _ratio(results, first, "HTA", "import trace")
    if hta is not None:
        checks.append((f"HTA / import trace on the {first}x file {hta:.1f}x (target >= {TARGET_HTA}x)", hta >= TARGET_HTA))
    peak = _median(results[(first, "import trace")], "peak_mib")
    checks.append((f"import trace peak on the {first}x file {peak:.0f} MiB (target <= {TARGET_PEAK_MIB:.0f} MiB)", peak <= TARGET_PEAK_MIB))
    if len(factors) > 1:
        last = factors[-1]
        growth = exponent(peak, _median(results[(last, "import trace")], "peak_mib"), sizes[first], sizes[last])
        checks.append((f"import trace memory growth {first}x->{last}x exponent {growth:.2f} (target < 1: sub-linear)", growth < 1.0))
    print()
    for text, ok in checks:
        print(f"{'ok  ' if ok else 'MISS'} {text}")


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
