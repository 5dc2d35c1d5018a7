"""What `sparsedebug bisect` of two traces imports, and the shortcuts that keep it out (issue 57: its start-up).

No timing is asserted here (``benchmarks/bisect_start.py`` measures it): these tests pin the modules a trace pair's
``bisect`` must not import (the review document's gate, energy, bundle and classification records, the rocprof reader
and sqlite3, the reduce and rank records, the stack profiles) and check that the shortcuts say what the long way says.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys

from tests.conftest import FIXTURES
from tests.locate.test_walk import make_run

H200 = FIXTURES / "h200"
PAIR = [str(H200 / "trace_dense_T2048.json.gz"), str(H200 / "trace_sparse_mlp_T2048.json.gz")]

NOT_IMPORTED = (
    "sqlite3",  # asked whether a gzip trace is rocprofv3 output: importers.rocprof_sniff, not the reader
    "sparsedebug.sources.importers.rocprof",
    "sparsedebug.sources.importers.activity",
    "sparsedebug.records.report",  # the clock label's RunFigures come from records.figures
    "sparsedebug.records.gate",
    "sparsedebug.records.energy",
    "sparsedebug.records.bundle",
    "sparsedebug.records.decision",
    "sparsedebug.records.classification",
    "sparsedebug.records.power",
    "sparsedebug.records.reduce",  # a type of the terminal view and of render.words.core only
    "sparsedebug.records.ranks",  # a type of runset.discover only
    "sparsedebug.signoff.report",  # the clock label needs no run_figures: no percentiles, no stack profiles
    "sparsedebug.sources.stacks",
    "sparsedebug.sources.bundle",
)
"""Modules a trace pair's ``bisect`` does without (each cost milliseconds of every start)."""


def _bisect_modules(*extra: str) -> set[str]:
    """Every module loaded by ``sparsedebug bisect PAIR`` in a fresh interpreter."""
    code = (
        "import sys\n"
        "from sparsedebug.cli.app import main\n"
        f"sys.argv = ['sparsedebug', 'bisect', *{[*PAIR, *extra]!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print('MODULES', sorted(sys.modules))\n"
    )
    env = {**os.environ, "COLUMNS": "100"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert "first persistent divergence: schedule" in out or '"first_stage": "schedule"' in out
    return set(ast.literal_eval(out.rsplit("MODULES ", 1)[1]))


def test_bisect_of_a_trace_pair_imports_none_of_the_document_records() -> None:
    loaded = _bisect_modules()
    assert sorted(m for m in NOT_IMPORTED if m in loaded) == []


def test_bisect_json_imports_none_of_them_either() -> None:
    loaded = _bisect_modules("--json")
    assert sorted(m for m in NOT_IMPORTED if m in loaded) == []


def test_the_clock_label_is_the_one_the_run_figures_give() -> None:
    """bisect's clock label from each run's name, backend and clock says what ``bundle_clock`` of the full figures says."""
    from sparsedebug.cli.bisect import _clock
    from sparsedebug.render.clocks import bundle_clock
    from sparsedebug.signoff.report import run_figures
    from sparsedebug.sources.detect import load_pair

    traced, _ = load_pair(*(FIXTURES / p for p in PAIR), repeats=None, progress=None, latency=None)
    made = make_run("dense", seed=1)
    for base, cand in ((traced, traced), (made, made), (traced, made), (made, traced)):
        assert _clock(base, cand) == bundle_clock([run_figures("baseline", base), run_figures("candidate", cand)])


def test_report_reexports_the_figures() -> None:
    """records.report still names every per-run figure (now defined in records.figures)."""
    from sparsedebug.records import figures, report

    for name in ("BackendStack", "Clock", "FallbackSummary", "LayerRow", "RealityFigures", "RunFigures"):
        assert getattr(report, name) is getattr(figures, name), name


def test_the_rocprof_sniff_knows_the_sqlite_magic_of_the_readers() -> None:
    from sparsedebug.sources.importers import activity, rocprof, rocprof_sniff

    assert rocprof_sniff.SQLITE_MAGIC == activity.SQLITE_MAGIC
    assert rocprof.OTHER_OUTPUTS is rocprof_sniff.OTHER_OUTPUTS and rocprof.TOOL_KEY == rocprof_sniff.TOOL_KEY


def test_main_collects_the_young_generation_less_often() -> None:
    """The console script's ``main`` sets the young generation's threshold (the older ones keep theirs)."""
    code = (
        "import gc, sys\n"
        "before = gc.get_threshold()\n"
        "from sparsedebug.cli.app import GC_YOUNG_THRESHOLD, main\n"
        "sys.argv = ['sparsedebug', '--version']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('GC', gc.get_threshold() == (GC_YOUNG_THRESHOLD, *before[1:]), GC_YOUNG_THRESHOLD > before[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "GC True True" in out
