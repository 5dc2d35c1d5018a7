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


def _column(text: str, index: int) -> str:
    """One column of a table's body lines, its pieces joined: a folded name reads whole again."""
    return "".join(line.split("│")[index].strip() for line in text.splitlines() if line.startswith("│"))


def test_kernel_names_fold_whole_and_short_words_are_never_split() -> None:
    from sparsedebug.core.kernel_names import short_kernel_name
    from sparsedebug.sources.importers.ncu import load_ncu

    csv = H200 / "ncu_dense_vs_sparse_11008x4096x2048.csv"
    out = _invoke(["import", "ncu", str(csv)]).stdout
    assert max(cell_len(line) for line in out.splitlines()) <= 80
    words = out.split()
    for kernel in load_ncu(csv).kernels:
        assert short_kernel_name(kernel.name, None) in _column(out, 2)  # folded, never cut
        assert kernel.kernel_class.value in words  # a short word stays on one line
    assert "duration" in words


def test_bench_numbers_and_headers_stay_whole_at_80_columns() -> None:
    import re

    out = _invoke(["bench", "kernel", "--shape", "256x256", "--tokens", "1,16", "--rounds", "2"]).stdout
    assert "tokens" in out.split() and max(cell_len(line) for line in out.splitlines()) <= 80
    body = [line.split("│")[1:-1] for line in out.splitlines() if line.startswith("│")]
    assert len(body) == 2, out  # one line per token count: nothing folded
    for cells in body:
        assert all(re.fullmatch(r"\d+(\.\d+)?x?", cell.strip()) for cell in cells), cells
    assert "tokens 16 (timing):" in out  # the long timing note went under the table


def test_a_gate_row_stays_short_and_its_detail_goes_under_the_table() -> None:
    out = _invoke(["gate", str(H200 / "trace_dense_T2048.json.gz"), str(H200 / "trace_sparse_mlp_T2048.json.gz")]).stdout
    table, _, notes = out.partition("└")
    assert "effective_speedup (detail):" in notes
    assert len(table.splitlines()) <= 40, table
    wide = _invoke(["gate", str(H200 / "trace_dense_T2048.json.gz"), str(H200 / "trace_sparse_mlp_T2048.json.gz"), "--wide"]).stdout
    assert "(detail):" not in wide and "detail" in wide
