"""Record Holistic Trace Analysis's temporal breakdown of trace files, as the reference the importer is tested against.

Needs HTA itself, which sparsedebug does not depend on; use a throwaway venv. HTA is published on PyPI as
``traceinsight`` since 0.6 (``HolisticTraceAnalysis`` stopped at 0.5.0; 0.6.1 gives the same figures on every
trace here); its ``jupyterlab`` requirement is for notebooks only, so install it without dependencies and add the
ones the analysis imports (psutil, PyYAML and ijson it imports without declaring them)::

    python -m venv /tmp/hta && /tmp/hta/bin/pip install --no-deps traceinsight==0.6.1
    /tmp/hta/bin/pip install "pandas>=1.5.2,<3" "numpy>=1.23.5" "networkx>=3.1" "plotly>=5.11.0" "pydot>=1.3.0" psutil pyyaml ijson
    HTA_DISABLE_NS_ROUNDING=1 /tmp/hta/bin/python benchmarks/hta_reference.py \\
        fixtures/h200/trace_*.json.gz fixtures/traces/*.json* fixtures/traces/hta/*.json.gz \\
        > fixtures/traces/hta_reference.json

``HTA_DISABLE_NS_ROUNDING=1`` keeps HTA from rounding timestamps to whole
microseconds (ts up, end down): with the rounding, sub-microsecond memsets get
negative durations and HTA 0.5 fails its own ``non_compute_time >= 0`` assertion
on the H200 traces. Each file is analysed alone (HTA reads a directory of
ranks), with HTA's default ``include_last_profiler_step=False`` and with ``True``.
Figures are HTA's, in microseconds; ``*.expected.json`` files are skipped.
HTA 0.5 and 0.6 predate pandas 3, whose stricter dtypes make HTA 0.5 fail on small traces
(an int8-downcast column): pin pandas below 3 in its venv.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def breakdown(path: Path, include_last: bool) -> dict[str, float] | str:
    """HTA's temporal breakdown of one trace file (microseconds), or the error HTA raised."""
    from hta.trace_analysis import TraceAnalysis

    folder = tempfile.mkdtemp()
    try:
        target = Path(folder) / (path.name if path.name.endswith((".json", ".gz")) else path.name + ".json")
        shutil.copy(path, target)
        analysis = TraceAnalysis(trace_dir=folder, include_last_profiler_step=include_last)
        row = analysis.get_temporal_breakdown(visualize=False).to_dict("records")[0]
        return {key: float(value) for key, value in row.items() if key.endswith("(us)")}
    except Exception as exc:  # noqa: BLE001 - HTA's own failures are recorded in the reference, not hidden
        return f"error: {type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _hta_version() -> str:
    """The installed HTA's version, under its PyPI name since 0.6 (``traceinsight``) or before (``HolisticTraceAnalysis``)."""
    for name in ("traceinsight", "HolisticTraceAnalysis"):
        try:
            return version(name)
        except PackageNotFoundError:
            continue
    raise SystemExit("HTA is not installed: pip install --no-deps traceinsight (see this script's docstring)")


def main(paths: list[str]) -> None:
    """Print the reference JSON for ``paths``."""
    logging.disable(logging.CRITICAL)
    out: dict[str, object] = {
        "hta_version": _hta_version(),
        "HTA_DISABLE_NS_ROUNDING": os.environ.get("HTA_DISABLE_NS_ROUNDING", ""),
        "traces": {},
    }
    traces: dict[str, object] = {}
    for name in paths:
        path = Path(name)
        if path.name.endswith(".expected.json") or path.name == "hta_reference.json":
            continue
        traces[path.as_posix()] = {"drop_last": breakdown(path, False), "include_last": breakdown(path, True)}
    out["traces"] = traces
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(lambda: main(sys.argv[1:]))
