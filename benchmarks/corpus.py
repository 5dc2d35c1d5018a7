"""Run import and every analysis over all traces in a directory; a crash is recorded, not fatal.

For each trace (``*.json``, ``*.json.gz``, sorted by name): ``import trace --json``
and ``classify``. For each consecutive pair (A, B): ``fallbacks A B``, ``bisect A
B``, ``classify B --baseline A``, ``gate A B`` and ``playbook run --baseline A
--candidate B``. Each command runs in its own subprocess (``python -m
sparsedebug``), so a traceback, a crash or a timeout becomes a row of the table.

Columns: exit code (0 ok, 1 a check failed, 2 bad input: all three are answers;
anything else, or a ``Traceback`` on stderr, is a crash), wall time, the
subprocess's own peak resident memory (VmHWM), and for imports the busy and
span the importer printed against an independent plain-Python union of the GPU
intervals of the busiest device (``json.load`` of the file, events of cat
kernel/gpu_memcpy/gpu_memset). Exit 1 when any command crashed, timed out or an
import's busy/span disagreed. Usage::

    python benchmarks/corpus.py DIR [--timeout 600] [--json rows.json] [--no-pairs]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


@dataclass
class Row:
    """One command over one trace or pair."""

    target: str
    command: str
    exit: int
    traceback: bool
    wall_s: float
    peak_mb: float
    check: str = ""
    note: str = ""

    @property
    def crashed(self) -> bool:
        """A traceback, an exit code outside 0/1/2, or a timeout."""
        return self.traceback or self.exit not in (0, 1, 2)


_BOOT = """
import atexit, os, runpy, sys
def _hwm():
    try:
        with open('/proc/self/status') as status:
            for line in status:
                if line.startswith('VmHWM:'):
                    with open(os.environ['CORPUS_HWM_FILE'], 'w') as out:
                        out.write(line.split()[1])
    except OSError:
        pass
atexit.register(_hwm)
sys.argv = ['sparsedebug', *sys.argv[1:]]
runpy.run_module('sparsedebug', run_name='__main__', alter_sys=True)
"""
"""Runs ``python -m sparsedebug`` and records the process's own peak RSS (VmHWM) at exit.

``wait4``'s ``ru_maxrss`` would include the parent's resident set at fork time
(Linux keeps the high-water mark across exec), so the child reports its own.
"""


def run_cli(args: list[str], timeout: float, cwd: Path | None = None) -> tuple[int, float, float, str, str]:
    """Run ``python -m sparsedebug ARGS``: (exit code, wall s, peak RSS MB, stdout, stderr); -9 on timeout.

    Peak RSS is the child's VmHWM; NaN when the child died before writing it.
    """
    with tempfile.TemporaryDirectory(prefix="corpus-run-") as tmp:
        hwm = Path(tmp) / "hwm"
        path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
        env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", "PYTHONPATH": path, "CORPUS_HWM_FILE": str(hwm)}
        out_path, err_path = Path(tmp) / "out", Path(tmp) / "err"
        with out_path.open("wb") as out, err_path.open("wb") as err:
            start = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-c", _BOOT, *args], stdout=out, stderr=err, env=env, cwd=cwd)
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                code = -9
            wall = time.perf_counter() - start
        peak = float(hwm.read_text()) / 1024.0 if hwm.exists() else float("nan")
        stdout = out_path.read_text("utf-8", "replace")
        stderr = err_path.read_text("utf-8", "replace")
    return code, wall, peak, stdout, stderr


def load_events(path: Path) -> list[Any]:
    """Every event of a Chrome trace (object with ``traceEvents`` or a bare array), by ``json.load``."""
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        doc = json.load(handle)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    return events if isinstance(events, list) else []


def independent_union(path: Path) -> tuple[float, float, int] | None:
    """(busy ms, span ms, ops) of the busiest device's GPU intervals, plain Python; None without any."""
    by_device: dict[Any, list[tuple[float, float]]] = {}
    for e in load_events(path):
        if not isinstance(e, dict) or e.get("ph") != "X" or e.get("cat") not in GPU_CATS:
            continue
        ts, dur = e.get("ts"), e.get("dur")
        if isinstance(ts, bool) or isinstance(dur, bool) or not isinstance(ts, int | float) or not isinstance(dur, int | float) or dur < 0:
            continue
        raw = e.get("args")
        args: dict[str, Any] = raw if isinstance(raw, dict) else {}
        device = args.get("device") if isinstance(args.get("device"), int) else e.get("pid")
        by_device.setdefault(device, []).append((float(ts), float(ts) + float(dur)))
    if not by_device:
        return None
    ops = max(by_device.values(), key=len)
    ops.sort()
    busy = 0.0
    cur_start, cur_end = ops[0]
    for start, end in ops[1:]:
        if start > cur_end:
            busy += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    busy += cur_end - cur_start
    span = max(end for _, end in ops) - ops[0][0]
    return busy / 1e3, span / 1e3, len(ops)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b)) + 1e-6


def import_check(path: Path, stdout: str) -> tuple[str, bool]:
    """Compare the importer's busy/span with the independent union; (text, ok)."""
    try:
        summary = json.loads(stdout)["summary"]
        busy, span = float(summary["busy_ms"]), float(summary["span_ms"])
    except (ValueError, KeyError, TypeError):
        return "no summary", True
    union = independent_union(path)
    if union is None:
        return "no GPU ops", False
    ok = _close(busy, union[0]) and _close(span, union[1])
    mark = "ok" if ok else "MISMATCH"
    return f"busy {busy:.3f}/{union[0]:.3f} span {span:.3f}/{union[1]:.3f} ms {mark}", ok


def _row(target: str, label: str, args: list[str], timeout: float) -> tuple[Row, str]:
    code, wall, peak, stdout, stderr = run_cli(args, timeout)
    note = ""
    if code == -9:
        note = f"timeout after {timeout:g} s"
    elif code != 0:
        lines = [line for line in stderr.strip().splitlines() if line.strip()]
        note = lines[-1][:100] if lines else ""
    return Row(target, label, code, "Traceback" in stderr, round(wall, 2), round(peak, 1), note=note), stdout


def trace_rows(path: Path, timeout: float) -> list[Row]:
    """import (with the busy/span check) and classify of one trace."""
    row, stdout = _row(path.name, "import trace", ["import", "trace", str(path), "--json"], timeout)
    if row.exit == 0:
        row.check, ok = import_check(path, stdout)
        if not ok:
            row.note = (row.note + " busy/span disagree with the independent union").strip()
    classify, _ = _row(path.name, "classify", ["classify", str(path)], timeout)
    return [row, classify]


def pair_rows(a: Path, b: Path, timeout: float, workdir: Path) -> list[Row]:
    """Every two-run analysis of (a, b)."""
    target = f"{a.name} -> {b.name}"
    bundle = workdir / f"bundle-{a.name}-{b.name}"
    commands = [
        ("fallbacks", ["fallbacks", str(a), str(b)]),
        ("bisect", ["bisect", str(a), str(b)]),
        ("classify -b", ["classify", str(b), "--baseline", str(a)]),
        ("gate", ["gate", str(a), str(b)]),
        ("playbook run", ["playbook", "run", "--baseline", str(a), "--candidate", str(b), "-o", str(bundle)]),
    ]
    return [_row(target, label, args, timeout)[0] for label, args in commands]


def render(rows: list[Row]) -> str:
    """The table as Markdown (quotable as is)."""
    head = "| target | command | exit | traceback | wall s | peak MB | busy/span vs union | note |"
    out = [head, "|" + "---|" * 8]
    for r in rows:
        out.append(f"| {r.target} | {r.command} | {r.exit} | {'yes' if r.traceback else 'no'} | {r.wall_s:.2f} | {r.peak_mb:.0f} | {r.check} | {r.note} |")
    return "\n".join(out)


def summary(rows: list[Row]) -> tuple[str, bool]:
    """One closing line and whether everything held."""
    crashed = [r for r in rows if r.crashed]
    mismatched = [r for r in rows if "MISMATCH" in r.check or r.check == "no GPU ops"]
    answered = [r for r in rows if not r.crashed]  # a crashed or timed-out run is counted above, never timed
    slowest = max(answered, key=lambda r: r.wall_s) if answered else None
    biggest = max(answered, key=lambda r: r.peak_mb) if answered else None
    text = f"{len(rows)} commands: {len(crashed)} crashed or timed out, {len(mismatched)} busy/span mismatches"
    if slowest is not None and biggest is not None:
        text += f"; slowest {slowest.wall_s:.2f} s ({slowest.command}, {slowest.target}); largest {biggest.peak_mb:.0f} MB ({biggest.command}, {biggest.target})"
    return text, not crashed and not mismatched


def traces_in(directory: Path) -> list[Path]:
    """The trace files of a directory, sorted by name."""
    return sorted(p for p in directory.iterdir() if p.is_file() and (p.name.endswith(".json") or p.name.endswith(".json.gz")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--timeout", type=float, default=600.0, help="Seconds before one command is killed.")
    parser.add_argument("--json", type=Path, default=None, help="Also write the rows as JSON here.")
    parser.add_argument("--no-pairs", action="store_true", help="Only the per-trace commands.")
    args = parser.parse_args()
    if not args.directory.is_dir():
        parser.error(f"{args.directory}: not a directory")
    traces = traces_in(args.directory)
    if not traces:
        parser.error(f"{args.directory}: no *.json or *.json.gz traces")
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="corpus-") as work:
        for path in traces:
            rows += trace_rows(path, args.timeout)
            print(f"  {path.name}: {rows[-2].wall_s:.2f} s import", file=sys.stderr, flush=True)
        if not args.no_pairs:
            for a, b in itertools.pairwise(traces):
                rows += pair_rows(a, b, args.timeout, Path(work))
                print(f"  {a.name} -> {b.name}: done", file=sys.stderr, flush=True)
    print(render(rows))
    line, ok = summary(rows)
    print()
    print(line)
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n", encoding="utf-8")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
