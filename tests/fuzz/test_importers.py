"""Fuzz every importer through the CLI: traces (JSON and gzip), Nsight Compute CSV, nvidia-smi CSV, TensorRT logs, and the
power logs (nvidia-smi with an energy counter, dcgm-exporter metrics, Zeus CSV, CodeCarbon emissions.csv) with a window."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import FIXTURES
from tests.fuzz.conftest import FUZZ
from tests.fuzz.harness import check_cli
from tests.fuzz.mutations import damaged_bytes, damaged_document, damaged_lines

TRACE = (FIXTURES / "artifacts" / "small_trace.json").read_bytes()
NCU = (FIXTURES / "h200" / "ncu_dense_vs_sparse_11008x4096x2048.csv").read_text()
SMI = (FIXTURES / "h200" / "nvidia_smi_short.csv").read_text()
TRT = (FIXTURES / "artifacts" / "trt_build_trtexec.log").read_text()
POWER = {
    name: (FIXTURES / "artifacts" / name).read_text()
    for name in ("power_smi_counter.csv", "power_dcgm_metrics.prom", "power_zeus.csv", "power_codecarbon_emissions.csv")
}
WINDOWS = st.sampled_from([[], ["--from", "2026-12-01T10:00:01Z", "--to", "2026-12-01T10:00:03Z"],
                           ["--from", "2026-12-01T10:00:00.2Z", "--to", "2026-12-01T10:00:00.25Z"], ["--from", "0", "--to", "1e12"], ["--from", "0", "--to", "2.5e11"]])


def _write(name: str, data: bytes | str) -> Path:
    path = Path(tempfile.mkdtemp(prefix="fuzz-")) / name
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8", errors="surrogateescape")
    else:
        path.write_bytes(data)
    return path


@FUZZ
@given(data=damaged_bytes(TRACE), compress=st.booleans())
def test_trace_bytes(data: bytes, compress: bool) -> None:
    name = "t.json.gz" if compress else "t.json"
    check_cli(["import", "trace", str(_write(name, gzip.compress(data) if compress else data))])


@pytest.mark.slow
@FUZZ
@given(doc=damaged_document(json.loads(TRACE)))
def test_trace_structure(doc: Any) -> None:
    check_cli(["import", "trace", str(_write("t.json", json.dumps(doc)))])


@FUZZ
@given(text=damaged_lines(NCU) | damaged_bytes(NCU.encode()).map(lambda b: b.decode("utf-8", "replace")))
def test_ncu_csv(text: str) -> None:
    check_cli(["import", "ncu", str(_write("k.csv", text))], ok=(0, 2))


@FUZZ
@given(text=damaged_lines(SMI), max_clock=st.none() | st.sampled_from(["0", "-5", "1980", "nan"]))
def test_smi_csv(text: str, max_clock: str | None) -> None:
    extra = [] if max_clock is None else ["--max-clock", max_clock]
    check_cli(["import", "smi", str(_write("s.csv", text)), *extra], ok=(0, 2))


@FUZZ
@given(text=damaged_lines(TRT) | st.lists(st.text(max_size=80), max_size=6).map("\n".join))
def test_tensorrt_log(text: str) -> None:
    check_cli(["import", "trtlog", str(_write("b.log", text)), "--check"])


def _power(name: str, text: str, window: list[str], offset: str | None) -> None:
    extra = [] if offset is None else ["--utc-offset", offset]
    check_cli(["import", "power", str(_write(name, text)), *window, *extra], ok=(0, 2))


@FUZZ
@given(text=damaged_lines(POWER["power_smi_counter.csv"]), window=WINDOWS, offset=st.none() | st.sampled_from(["0", "-5.5", "nan", "30"]))
def test_power_smi_csv(text: str, window: list[str], offset: str | None) -> None:
    _power("p.csv", text, window, offset)


@FUZZ
@given(text=damaged_lines(POWER["power_dcgm_metrics.prom"]) | damaged_bytes(POWER["power_dcgm_metrics.prom"].encode()).map(
    lambda b: b.decode("utf-8", "replace")), window=WINDOWS)
def test_power_dcgm_metrics(text: str, window: list[str]) -> None:
    _power("m.prom", text, window, None)


@FUZZ
@given(text=damaged_lines(POWER["power_zeus.csv"]) | damaged_bytes(POWER["power_zeus.csv"].encode()).map(
    lambda b: b.decode("utf-8", "replace")), window=WINDOWS)
def test_power_zeus_csv(text: str, window: list[str]) -> None:
    _power("zeus.csv", text, window, None)


@FUZZ
@given(text=damaged_lines(POWER["power_codecarbon_emissions.csv"]), window=WINDOWS, offset=st.none() | st.just("0"))
def test_power_codecarbon_csv(text: str, window: list[str], offset: str | None) -> None:
    _power("emissions.csv", text, window, offset)
