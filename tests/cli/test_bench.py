"""`sparsedebug bench kernel` through the CLI: JSON schema, table, and every bad input.

Timings are never asserted: only that they were measured and that ratios follow
from the medians.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import assert_json_error, invoke

SMALL = ["bench", "kernel", "--shape", "64x128", "--tokens", "1,8", "--block", "16", "--rounds", "2"]


def test_json_has_one_object_per_token_count() -> None:
    result = invoke([*SMALL, "--json"])
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [row["tokens"] for row in rows] == [1, 8]
    for row in rows:
        for key in ("dense_ms", "limit_ms", "csr_ms", "nm_ms", "vnm_ms"):
            assert row[key] > 0.0
        assert row["vnm_vs_dense"] == pytest.approx(row["dense_ms"] / row["vnm_ms"])
        assert row["vnm_vs_limit"] == pytest.approx(row["limit_ms"] / row["vnm_ms"])
        assert row["nm_vs_csr"] == pytest.approx(row["csr_ms"] / row["nm_ms"])
        assert row["blas_threads"] >= 1
        assert row["shape"] == [64, 128] and row["pattern"] == "2:4" and row["block"] == 16
        assert set(row["percentiles_ms"]) == {"dense", "limit", "csr", "nm", "vnm"}
        assert all(p["n"] == 2 for p in row["percentiles_ms"].values())
        assert row["percentiles_ms"]["vnm"]["p50"] == pytest.approx(row["vnm_ms"])
    assert "timing 8 tokens" in result.stderr


def test_table_and_tails() -> None:
    result = invoke([*SMALL, "--tails", "--pattern", "4:8"])
    assert result.exit_code == 0, result.stderr
    assert "kernel bench 64x128 fp32, 4:8, block 16" in result.stdout
    assert "vnm vs limit" in result.stdout
    assert "tails (ms)" in result.stdout


def test_block_from_pattern() -> None:
    result = invoke(["bench", "kernel", "--shape", "32x16", "--tokens", "2", "--rounds", "1", "--pattern", "8:1:4", "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)[0]["block"] == 8


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--shape", "4096x4095"], ["K=4095 is not divisible by M=4"]),
        (["--shape", "4096"], ["--shape '4096'", "OUTxIN"]),
        (["--shape", "0x8"], ["at least 1"]),
        (["--tokens", "1,x"], ["'x' is not a positive integer"]),
        (["--tokens", "0"], ["'0' is not a positive integer"]),
        (["--pattern", "4:4"], ["N=4"]),
        (["--pattern", "1:32"], ["M=32"]),
        (["--pattern", "64:2:4", "--block", "32"], ["sets block 64", "--block says 32"]),
        (["--block", "0"], ["--block 0"]),
        (["--rounds", "0"], ["--rounds 0"]),
    ],
)
def test_bad_input_is_a_clean_exit_2(args: list[str], needles: list[str]) -> None:
    base = ["bench", "kernel", "--shape", "16x16", "--tokens", "1", "--rounds", "1"]
    result = invoke([*base, *args, "--json"])
    assert_json_error(result, 2, *needles)  # --json: the error object on stdout as well


def test_help_names_the_variants() -> None:
    result = invoke(["bench", "kernel", "--help"])
    assert result.exit_code == 0
    for word in ("dense", "limit", "csr", "interleaved", "--block", "--tokens"):
        assert word in result.stdout


def test_rows_report_the_timing_flags() -> None:
    result = invoke([*SMALL, "--json"])
    assert result.exit_code == 0, result.stderr
    for row in json.loads(result.stdout):
        timing = row["timing"]
        assert timing["status"] in ("stable", "unstable") and timing["rounds"] == 2
        assert [v["name"] for v in timing["variants"]] == ["dense", "limit", "csr", "nm", "vnm"]
        assert all(len(v["wall_ms"]) == len(v["cpu_ms"]) == 2 for v in timing["variants"])
    table = invoke(SMALL)
    assert "timing" in table.stdout and "this machine, measured" in table.stdout
