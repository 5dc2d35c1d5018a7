"""Golden SVGs: the small bundle's figures, byte for byte.

Regenerate after an intended change with ``SPARSEDEBUG_UPDATE_GOLDEN=1 python -m pytest tests/render/html/test_golden.py``
and look at the new files before committing them. Independently of the goldens, the same records must give the same
bytes in another process with another hash seed.
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


def figures() -> dict[str, str]:
    """Figure key -> SVG text of the small bundle."""
    return {s.key: s.chart.svg for s in bundle_sections(small_bundle()) if s.chart is not None}


def test_figures_match_the_goldens() -> None:
    svgs = figures()
    assert sorted(svgs) == ["forward", "latency", "layers", "quality", "reality", "timeline"]
    if os.environ.get("SPARSEDEBUG_UPDATE_GOLDEN"):
        for key, svg in svgs.items():
            (GOLDEN / f"{key}.svg").write_text(svg, encoding="utf-8")
    for key, svg in svgs.items():
        golden = (GOLDEN / f"{key}.svg").read_text(encoding="utf-8")
        assert svg == golden, f"{key}.svg differs from the golden (see the module docstring to regenerate)"


@pytest.mark.slow
def test_another_process_and_hash_seed_give_the_same_bytes() -> None:
    script = (
        "import json, sys\n"
        "from tests.render.html.test_golden import figures\n"
        "json.dump(figures(), sys.stdout)\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345", PYTHONPATH=str(REPO_ROOT))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env, cwd=REPO_ROOT)
    import json

    assert json.loads(out.stdout) == figures()
