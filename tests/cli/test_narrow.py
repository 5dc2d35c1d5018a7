"""Tables in an 80-column terminal: nothing squeezed to nothing, no name cut short, --wide for every column."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner, Result

from sparsedebug.cli.app import app
from tests.conftest import FIXTURES

H200 = FIXTURES / "h200"
WORKLOADS = FIXTURES / "workloads"


def _invoke(args: Sequence[str], columns: int = 80) -> Result:
    runner = CliRunner(env={"COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb"})
    result = runner.invoke(app, list(args), catch_exceptions=True)
    assert result.exit_code in (0, 1), (result.exit_code, result.stderr, result.exception)
    return result


COMMANDS = [
    ["lower", "llama_2of4_regressed"],
    ["lower", "llama_2of4_regressed", "--all"],
    ["bisect", str(H200 / "trace_dense_T2048.json.gz"), str(H200 / "trace_sparse_mlp_T2048.json.gz")],
    ["classify", str(H200 / "trace_sparse_mlp_T2048.json.gz"), "--baseline", str(H200 / "trace_dense_T2048.json.gz")],
    ["import", "trace", str(H200 / "trace_sparse_mlp_T2048.json.gz")],
    ["fallbacks", str(H200 / "trace_dense_T2048.json.gz"), str(H200 / "trace_sparse_mlp_T2048.json.gz")],
    ["gate", str(H200 / "trace_dense_T2048.json.gz"), str(H200 / "trace_sparse_mlp_T2048.json.gz")],
    ["import", "smi", str(H200 / "nvidia_smi_short.csv")],
    ["playbook", "show"],
    ["freeze"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_tables_fit_80_columns_without_cutting_names(args: list[str]) -> None:
    out = _invoke(args).stdout
    lines = out.splitlines()
    assert max(cell_len(line) for line in lines) <= 80
    assert "…" not in out, [line for line in lines if "…" in line]
    for squeezed in ("┃┃", "││", "┳┳", "┻┻"):  # a column rendered zero wide
        assert squeezed not in out, squeezed


def test_the_lower_table_leaves_out_byte_columns_and_says_so() -> None:
    narrow = _invoke(["lower", "llama_2of4_regressed"]).stdout
    assert "layers.1.mlp.down_proj" in narrow and "dtype_unsupported" in narrow  # whole, not cut
    assert "left out to fit 80 columns: metadata, values, per call, convert ms, target sparse/dense ms; --wide shows all" in " ".join(narrow.split())
    assert "metadata" not in narrow.split("left out")[0]
    wide = _invoke(["lower", "llama_2of4_regressed", "--wide"]).stdout
    for header in ("convert ms", "per call", "values", "metadata", "target sparse/dense ms"):
        assert header in wide
    assert "left out" not in wide
    assert max(cell_len(line) for line in wide.splitlines()) > 80


def test_wide_tables_are_unchanged_when_they_fit() -> None:
    """At 200 columns nothing is left out or folded: the table is the renderer's, as built."""
    wide = _invoke(["lower", "llama_2of4_regressed"], columns=200).stdout
    assert "left out" not in wide and "metadata" in wide


@pytest.mark.parametrize(
    "command",
    [["replay"], ["lower"], ["bisect"], ["classify"], ["gate"], ["import", "trace"], ["import", "ncu"], ["import", "smi"],
     ["import", "trtlog"], ["fallbacks"], ["reduce"], ["freeze"], ["playbook", "show"], ["playbook", "run"], ["bench", "kernel"]],
)
def test_every_table_command_has_wide(command: list[str]) -> None:
    assert "--wide" in _invoke([*command, "--help"], columns=120).stdout
