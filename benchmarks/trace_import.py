"""Trace import against a plain decode of the same file, side by side, and its growth with the file.

Generates a Kineto-style training trace with ``tests.support.tracegen`` (nested CPU ops,
forward/backward/optimizer, NCCL; about EVENTS events, >= 50 MB at the default) and its 2x
and 4x (twice and four times the iterations). Each variant runs in a fresh process per
round, variants interleaved (rotating order), and reports its wall time, CPU time and peak
RSS (VmHWM):

``ours``          ``analyze_trace``: the whole import (read, structure, analysis, record)
``ours: read``    ``read_events`` alone (the streamed decode and the per-event filing)
``json.load``     ``json.load`` of the whole document (no analysis at all)
``orjson``        ``orjson.loads`` of the file's bytes, where orjson is installed
``HTA``           Holistic Trace Analysis's temporal breakdown, with ``--hta-python`` naming a
                  Python where HTA is installed (a throwaway venv: see benchmarks/hta_reference.py)

Ratios are medians against ``json.load`` (wall, same round). The growth exponent is
d log(t or memory) / d log(file size) between consecutive sizes (1.0: linear).

Usage: python benchmarks/trace_import.py [--events 200000] [--rounds 3] [--sizes 1,2,4] [--hta-python PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.support.tracegen import spec_for_events, write_trace

PROBE = """
import json, resource, sys, time
from pathlib import Path
path = Path(sys.argv[1])
wall, cpu = time.perf_counter(), time.process_time()
{body}
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({{"wall": wall, "cpu": cpu, "peak_mib": hwm / 1024}}))
"""

BODIES = {
    "ours": "from sparsedebug.sources.importers.trace.importer import analyze_trace\nanalyze_trace(path)",
    "ours: read": "from sparsedebug.sources.importers.trace.read.events import read_events\nread_events(path)",
    "json.load": "with path.open() as f:\n    json.load(f)",
    "orjson": "import orjson\norjson.loads(path.read_bytes())",
}
HTA_BODY = (
    "import logging, os, shutil, tempfile\nlogging.disable(logging.WARNING)\n"
    "from hta.trace_analysis import TraceAnalysis\n"
    "d = tempfile.mkdtemp(); shutil.copy(path, os.path.join(d, 'rank-0.json'))\n"
    "TraceAnalysis(trace_dir=d).get_temporal_breakdown(visualize=False)"
)
"""HTA's temporal breakdown of the file alone (HTA reads a directory of ranks)."""


def has_orjson() -> bool:
    """Whether this interpreter can import orjson."""
    try:
        import orjson  # noqa: F401
    except ImportError:
        return False
    return True


def run(python: str, body: str, path: Path) -> dict[str, float]:
    """One variant in a fresh process: wall, CPU seconds and peak MiB."""
    out = subprocess.run([python, "-c", PROBE.format(body=body), str(path)], check=True, capture_output=True, text=True,
                         env={"PYTHONPATH": str(HERE.parent), "HTA_DISABLE_NS_ROUNDING": "1", "PATH": "/usr/bin:/bin"})
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def exponent(a: float, b: float, size_a: float, size_b: float) -> float:
    """Growth exponent between two sizes."""
    return math.log(b / a) / math.log(size_b / size_a)


def main() -> None:
    """Generate the traces, time every variant interleaved, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="1,2,4")
    parser.add_argument("--hta-python", default=None)
    args = parser.parse_args()
    variants = {name: (sys.executable, body) for name, body in BODIES.items() if name != "orjson" or has_orjson()}
    if args.hta_python:
        variants["HTA"] = (args.hta_python, HTA_BODY)
    factors = [int(f) for f in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        base = spec_for_events(args.events)
        files: dict[int, Path] = {}
        for factor in factors:
            files[factor] = Path(tmp) / f"trace_{factor}x.json"
            truth = write_trace(files[factor], replace(base, iterations=base.iterations * factor))
            print(f"{factor}x: {files[factor].stat().st_size / 1e6:.1f} MB, {truth.events} events")
        results: dict[tuple[int, str], list[dict[str, float]]] = {}
        names = list(variants)
        for r in range(args.rounds):
            for factor in factors:
                shift = r % len(names)
                for name in names[shift:] + names[:shift]:
                    python, body = variants[name]
                    results.setdefault((factor, name), []).append(run(python, body, files[factor]))
        sizes = {factor: files[factor].stat().st_size for factor in factors}
    print(f"\n{args.rounds} interleaved rounds, medians; ratio = wall / json.load's wall on the same file")
    print(f"{'file':<5} {'variant':<11} {'wall s':>7} {'cpu s':>7} {'peak MiB':>9} {'/ json.load':>12}")
    for factor in factors:
        ref = statistics.median(m["wall"] for m in results[(factor, "json.load")])
        for name in names:
            rows = results[(factor, name)]
            wall = statistics.median(m["wall"] for m in rows)
            cpu = statistics.median(m["cpu"] for m in rows)
            peak = statistics.median(m["peak_mib"] for m in rows)
            print(f"{factor}x{'':<3} {name:<11} {wall:7.2f} {cpu:7.2f} {peak:9.0f} {wall / ref:11.2f}x")
    if len(factors) > 1:
        print("\ngrowth exponent (1.0 = linear) between consecutive sizes: time (cpu), peak memory")
        for name in names:
            parts = []
            for a, b in zip(factors, factors[1:], strict=False):
                cpu_a = statistics.median(m["cpu"] for m in results[(a, name)])
                cpu_b = statistics.median(m["cpu"] for m in results[(b, name)])
                mem_a = statistics.median(m["peak_mib"] for m in results[(a, name)])
                mem_b = statistics.median(m["peak_mib"] for m in results[(b, name)])
                parts.append(f"{a}x->{b}x time {exponent(cpu_a, cpu_b, sizes[a], sizes[b]):.2f}, "
                             f"memory {exponent(mem_a, mem_b, sizes[a], sizes[b]):.2f}")
            print(f"  {name:<11} " + "; ".join(parts))


if __name__ == "__main__":
    main()
