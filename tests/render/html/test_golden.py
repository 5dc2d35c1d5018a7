"""Golden SVGs: the small bundle's figures, byte for byte, for the pinned matplotlib (see golden/MATPLOTLIB).

Regenerate after an intended change with ``SPARSEDEBUG_UPDATE_GOLDEN=1 python -m pytest tests/render/html/test_golden.py``
and look at the new files before committing them. Independently of the goldens, the same records must give the same
bytes in another process with another hash seed and a hostile matplotlibrc.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparsedebug.render.html.bundle import bundle_sections
from tests.conftest import REPO_ROOT
from tests.render.html.common import small_bundle

GOLDEN = Path(__file__).resolve().parent / "golden"
VERSION_FILE = GOLDEN / "MATPLOTLIB"


def figures() -> dict[str, str]:
    """Figure key -> SVG text of the small bundle."""
    return {s.key: s.chart.svg for s in bundle_sections(small_bundle()) if s.chart is not None}


def test_figures_match_the_goldens() -> None:
    import matplotlib

    svgs = figures()
    assert sorted(svgs) == ["forward", "latency", "layers", "quality", "reality", "timeline"]
    if os.environ.get("SPARSEDEBUG_UPDATE_GOLDEN"):
        for key, svg in svgs.items():
            (GOLDEN / f"{key}.svg").write_text(svg, encoding="utf-8")
        VERSION_FILE.write_text(matplotlib.__version__ + "\n")
    pinned = VERSION_FILE.read_text().strip()
    if matplotlib.__version__ != pinned:
        pytest.skip(f"goldens are for matplotlib {pinned} (the test extra pins it); installed {matplotlib.__version__}")
    for key, svg in svgs.items():
        golden = (GOLDEN / f"{key}.svg").read_text(encoding="utf-8")
        assert svg == golden, f"{key}.svg differs from the golden (see the module docstring to regenerate)"


@pytest.mark.slow
def test_another_process_hash_seed_and_matplotlibrc_give_the_same_bytes(tmp_path: Path) -> None:
    rc = tmp_path / "matplotlibrc"
    rc.write_text("lines.linewidth: 7\nfont.size: 22\naxes.prop_cycle: cycler('color', ['r', 'g'])\nsvg.fonttype: none\n")
    script = (
        "import json, sys\n"
        "from tests.render.html.test_golden import figures\n"
        "json.dump(figures(), sys.stdout)\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345", MATPLOTLIBRC=str(rc), PYTHONPATH=str(REPO_ROOT))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env, cwd=REPO_ROOT)
    import json

    assert json.loads(out.stdout) == figures()
