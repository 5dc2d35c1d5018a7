"""Where the benchmarks' figures live: each benchmark run writes its output to one section of one file.

Figures that depend on the machine are quoted nowhere else (README.md and docs/ quote no timing by hand;
tests/test_docs.py refuses one). ``record(main)`` runs a benchmark's ``main``, echoes its standard output as
usual and then replaces the benchmark's section of ``docs/benchmarks/results.md`` with that output and the
conditions it was measured under: the machine (CPU model, logical cores, memory), the date (UTC), the load
average before and after, the Python and numpy versions and the exact command line. The file is a page of
the documentation site. ``SPARSEDEBUG_BENCH_RESULTS`` names another file to write (a run on another machine
that should not touch the shipped one), or ``-`` for none.
"""

from __future__ import annotations

import contextlib
import io
import os
import platform
import re
import shlex
import sys
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "results.md"
HEADER = """# Benchmark results

Written by the benchmarks themselves (`benchmarks/results.py`): each run of a benchmark replaces its own
section with its output and the conditions it ran under. These figures belong to the machine, the date and
the load they name; run the benchmark where you deploy rather than trusting them elsewhere. Nothing else in
the documentation quotes a machine-dependent timing.
"""
SECTION = re.compile(r"^## `benchmarks/([\w.]+)`$", flags=re.M)


class _Tee(io.TextIOBase):
    """A stdout that also keeps what was written."""

    def __init__(self, target: io.TextIOBase) -> None:
        self.target = target
        self.kept = io.StringIO()

    def write(self, text: str) -> int:
        self.kept.write(text)
        return self.target.write(text)

    def flush(self) -> None:
        self.target.flush()


def machine() -> str:
    """The CPU model, its logical cores and the memory, as this machine reports them."""
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        kib = int(Path("/proc/meminfo").read_text().split("MemTotal:", 1)[1].split()[0])
        memory = f", {kib / 2**20:.1f} GiB memory"
    return f"{model}, {os.cpu_count()} logical cores{memory}, {platform.system()} {platform.release()}"


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def section(name: str, command: str, output: str, started: datetime, load_before: str) -> str:
    """One benchmark's section: its conditions, then its output as printed."""
    import numpy

    lines = [
        f"## `benchmarks/{name}`",
        "",
        f"- command: `{command}`",
        f"- date: {started.strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {machine()}",
        f"- load average (1 / 5 / 15 min): {load_before} before, {_load()} after",
        f"- Python {platform.python_version()}, numpy {numpy.__version__}",
        "",
        "```text",
        output.rstrip("\n"),
        "```",
        "",
    ]
    return "\n".join(lines)


def write_section(path: Path, name: str, text: str) -> None:
    """Replace (or add, in name order) the benchmark's section of the results file, atomically."""
    current = path.read_text() if path.is_file() else HEADER
    starts = [(m.start(), m.group(1)) for m in SECTION.finditer(current)]
    head = current[: starts[0][0]] if starts else current.rstrip("\n") + "\n\n"
    parts = {found: current[start : (starts[i + 1][0] if i + 1 < len(starts) else len(current))]
             for i, (start, found) in enumerate(starts)}
    parts[name] = text
    body = head + "".join(parts[key].rstrip("\n") + "\n\n" for key in sorted(parts))
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".partial") as handle:
        handle.write(body.rstrip("\n") + "\n")
    os.replace(handle.name, path)


def record(main: Callable[[], object]) -> None:
    """Run a benchmark's ``main`` and write what it printed to its section of the results file.

    Nothing is written when the benchmark fails (an exception, or a non-zero exit)."""
    target = os.environ.get("SPARSEDEBUG_BENCH_RESULTS", str(RESULTS))
    name = Path(sys.argv[0]).name
    command = shlex.join(["python", f"benchmarks/{name}", *sys.argv[1:]])
    started, load_before = datetime.now(timezone.utc), _load()
    tee = _Tee(sys.stdout)  # type: ignore[arg-type]
    with contextlib.redirect_stdout(tee):
        code = main()
    if code not in (None, 0):
        raise SystemExit(code)
    if target != "-":
        write_section(Path(target), name, section(name, command, tee.kept.getvalue(), started, load_before))
        print(f"results written to {target}", file=sys.stderr)
