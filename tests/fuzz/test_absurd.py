"""Fuzz the values no measurement can hold, as classes over their ranges (issue 55): latencies beyond any forward,
energy counters that run backwards or rise faster than any board draws, power above the board's limit, clocks in
another unit than the log says, sample times out of order or all at one time, an engine's layers listed twice,
tensor dimensions that are no sizes, YAML keys given twice, and traces of a single forward compared as runs.

Each target draws a value over a wide range, runs the real command and holds it to one rule: refused (exit 2, one
line naming the file and the value's line or field) exactly when the value is outside what the check allows, read
otherwise. Never a traceback.
"""

from __future__ import annotations

import copy
import json
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import load_data, save_record
from sparsedebug.records.defaults import MAX_DURATION_MS
from sparsedebug.sources.importers.nvidia_smi import MIN_RUNNING_CLOCK_MHZ
from sparsedebug.sources.importers.power.window import OVER_LIMIT_FACTOR
from tests.fuzz.conftest import FUZZ
from tests.fuzz.harness import check_cli
from tests.support.engines import GRAPH, build_engine_pair
from tests.support.powerlogs import smi_stamp, write_dcgm_metrics, write_smi_power_log
from tests.support.synth import dense_run, sparse_run
from tests.support.tracegen import TraceSpec, generate, write_doc

T0 = 1_764_583_200.0  # 2025-12-01 10:00 UTC
LIMIT_W = 700.0


def _folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="fuzz-absurd-"))


def _magnitude(low: float, high: float) -> st.SearchStrategy[float]:
    """Positive numbers spread evenly over their orders of magnitude, 10**low to 10**high."""
    return st.floats(low, high).map(lambda e: 10.0**e)


@FUZZ
@given(value=_magnitude(-3, 40), where=st.integers(0, 4), form=st.sampled_from(["csv_ms", "csv_s", "json_us"]))
def test_a_latency_beyond_any_forward_is_refused(value: float, where: int, form: str) -> None:
    folder = _folder()
    base, cand = folder / "base.json", folder / "cand.json"
    save_record(dense_run(5.0, n=5), base)
    save_record(sparse_run(4.0, n=5), cand)
    values = [5.0] * 5
    values[where] = value
    scale = {"csv_ms": 1.0, "csv_s": 1e-3, "json_us": 1e3}[form]
    lat = folder / ("lat.json" if form == "json_us" else "lat.csv")
    if form == "json_us":
        lat.write_text(json.dumps({"times_us": [v * scale for v in values]}))
    else:
        lat.write_text(("latency_ms\n" if form == "csv_ms" else "time_s\n") + "".join(f"{v * scale!r}\n" for v in values))
    other = folder / "other.csv"
    other.write_text("latency_ms\n" + "5.0\n" * 5)
    result = check_cli(["gate", str(base), str(cand), "--latency", str(lat), str(other)])
    if value > MAX_DURATION_MS * 1.001:
        assert result.exit_code == 2 and str(lat) in result.stderr and "latency (ms)" in result.stderr, (value, result.stderr)
    elif value < MAX_DURATION_MS * 0.999:
        assert "latency (ms)" not in result.stderr, (value, result.stderr)


@FUZZ
@given(value=_magnitude(-2, 40), index=st.integers(0, 5))
def test_a_run_record_sample_beyond_any_forward_is_named(value: float, index: int) -> None:
    folder = _folder()
    base = folder / "base.json"
    save_record(dense_run(5.0, n=6), base)
    doc = sparse_run(4.0, n=6).model_dump(mode="json")
    doc["outcome"]["latency_samples_ms"][index] = value
    cand = folder / "cand.json"
    cand.write_text(json.dumps(doc))
    result = check_cli(["gate", str(base), str(cand)])
    if value > MAX_DURATION_MS * 1.001:
        assert result.exit_code == 2, (value, result.stderr)
        assert f"outcome.latency_samples_ms.{index}: Input should be less than or equal to" in result.stderr
        assert f"got {value!r}" in result.stderr, result.stderr


def _counter_verdict(watts: float, period: float) -> bool | None:
    """Whether a counter interval of ``watts`` must be refused (None: within a watt of the bound, or a step the
    log's whole millijoules round away, either is right)."""
    ceiling = OVER_LIMIT_FACTOR * LIMIT_W
    if abs(watts * period * 1000.0) < 1.0:
        return None
    if watts < 0:
        return True
    if abs(watts - ceiling) < 1.0:
        return None
    return watts > ceiling


@FUZZ
@given(watts=st.floats(-1e7, 1e7) | _magnitude(-1, 7), at=st.integers(1, 8), period=st.sampled_from([0.1, 0.25, 1.0]))
def test_an_energy_counter_that_runs_backwards_or_too_fast(watts: float, at: int, period: float) -> None:
    power = [300.0] * 10
    power[at] = watts
    # a counter at 4 GJ: no step drawn here takes it near 0 (a driver restart) or across a 32-bit wrap
    log = write_smi_power_log(_folder() / "smi.csv", T0, period, power, fields=(), energy_start_mj=4e12, power_limit_w=LIMIT_W)
    result = check_cli(["import", "power", str(log)], ok=(0, 2))
    refused = _counter_verdict(watts, period)
    if refused is not None:
        assert (result.exit_code == 2) == refused, (watts, result.stderr)
    if refused:
        assert f"line {at + 3}, total_energy_consumption: the " in result.stderr, result.stderr


@FUZZ
@given(watts=st.floats(-1e7, 1e7), at=st.integers(1, 8))
def test_a_dcgm_counter_that_runs_backwards_or_too_fast(watts: float, at: int) -> None:
    """The counter of dcgm-exporter (mJ) under the same check; its power gauge reads the same watts, so a negative
    interval is refused by either (both name the line)."""
    power = [300.0] * 10
    power[at] = watts
    log = write_dcgm_metrics(_folder() / "m.prom", T0, 0.1, power, energy_start_mj=4e12)
    result = check_cli(["import", "power", str(log)], ok=(0, 2))
    refused = _counter_verdict(watts, 0.1)
    if refused is not None:
        assert (result.exit_code == 2) == refused, (watts, result.stderr)


@FUZZ
@given(watts=_magnitude(0, 8), field=st.sampled_from(["power.draw", "power.draw.instant"]))
def test_power_above_the_board_limit_is_refused(watts: float, field: str) -> None:
    power = [300.0] * 6
    power[2] = watts
    log = write_smi_power_log(_folder() / "smi.csv", T0, 0.1, power, fields=(field,), power_limit_w=LIMIT_W)
    result = check_cli(["import", "power", str(log)], ok=(0, 2))
    ceiling = OVER_LIMIT_FACTOR * LIMIT_W
    if abs(watts - ceiling) > 0.01:
        assert (result.exit_code == 2) == (watts > ceiling), (watts, result.stderr)
    if watts > ceiling + 0.01:
        assert f"line 4, {field}:" in result.stderr and "beyond the board limit of 700 W" in result.stderr


MHZ_PER = {"Hz": 1e-6, "kHz": 1e-3, "MHz": 1.0, "GHz": 1e3}


@FUZZ
@given(value=_magnitude(-3, 6), unit=st.sampled_from(list(MHZ_PER)), in_cell=st.booleans())
def test_a_clock_is_read_in_its_unit_and_refused_below_any_gpu_clock(value: float, unit: str, in_cell: bool) -> None:
    header = f"timestamp, clocks.sm [{'MHz' if in_cell else unit}], power.draw [W]"
    cell = f"{value!r} {unit}" if in_cell else f"{value!r}"
    rows = [f"{smi_stamp(T0 + 0.1 * k)}, {cell if k == 1 else '1980 MHz' if in_cell else repr(1980 / MHZ_PER[unit])}, 300 W"
            for k in range(4)]
    log = _folder() / "smi.csv"
    log.write_text("\n".join([header, *rows]) + "\n")
    result = check_cli(["import", "smi", str(log)], ok=(0, 2))
    mhz = value * MHZ_PER[unit]
    if 0 < mhz < MIN_RUNNING_CLOCK_MHZ * 0.999:
        assert result.exit_code == 2 and "line 3" in result.stderr and "below any running GPU clock" in result.stderr, (mhz, result.stderr)
    elif MIN_RUNNING_CLOCK_MHZ * 1.001 < mhz < 99_000.0:
        assert result.exit_code == 0, (value, unit, result.stderr)
    elif mhz > 100_001.0:
        assert result.exit_code == 2 and "line 3" in result.stderr, (mhz, result.stderr)


@FUZZ
@given(offsets=st.lists(st.integers(-3_600_000, 3_600_000), min_size=2, max_size=8), constant=st.booleans())
def test_an_smi_log_out_of_time_order_or_at_one_time_is_refused(offsets: list[int], constant: bool) -> None:
    times = [0] * len(offsets) if constant else offsets  # milliseconds from T0
    header = "timestamp, clocks.sm [MHz], power.draw [W]"
    rows = [f"{smi_stamp(T0 + t / 1000.0)}, 1980 MHz, 300 W" for t in times]
    log = _folder() / "smi.csv"
    log.write_text("\n".join([header, *rows]) + "\n")
    result = check_cli(["import", "smi", str(log)], ok=(0, 2))
    backwards = next((k for k in range(1, len(times)) if times[k] < max(times[:k])), None)
    if backwards is not None:
        assert result.exit_code == 2 and "the log's rows must be in time order" in result.stderr, (times, result.stderr)
    elif times[0] == times[-1]:
        assert result.exit_code == 2 and "samples of GPU 0 are at" in result.stderr, (times, result.stderr)
    else:
        assert result.exit_code == 0, (times, result.stderr)


def _engine(graph: dict[str, Any]) -> Path:
    folder = build_engine_pair(_folder(), inferences=20).dense
    (folder / "engine.graph.json").write_text(json.dumps(graph))
    return folder


GRAPH_DOC = json.loads(GRAPH.read_text())


@FUZZ
@given(data=st.data())
def test_an_engine_listing_a_layer_twice_is_refused(data: st.DataObject) -> None:
    graph = json.loads(json.dumps(GRAPH_DOC))
    layers = graph["Layers"]
    repeated = data.draw(st.lists(st.integers(0, len(layers) - 1), min_size=0, max_size=len(layers)))
    for index in repeated:
        layers.insert(data.draw(st.integers(0, len(layers))), copy.deepcopy(layers[index]))
    result = check_cli(["import", "trt-engine", str(_engine(graph))], ok=(0, 2))
    if repeated:
        assert result.exit_code == 2 and "is listed twice (first at Layers[" in result.stderr, result.stderr
    else:
        assert result.exit_code == 0, result.stderr


DIMENSION = st.integers(-(2**40), 2**40) | st.sampled_from([-1, 0, True, 1.5, "x", None, [2]])


@FUZZ
@given(data=st.data(), dims=st.lists(DIMENSION, max_size=5) | st.sampled_from(["1x3", 3, {"n": 1}]))
def test_malformed_dimensions_of_an_engine_tensor_are_refused(data: st.DataObject, dims: Any) -> None:
    graph = json.loads(json.dumps(GRAPH_DOC))
    layers = [layer for layer in graph["Layers"] if isinstance(layer, dict) and layer.get("Outputs")]
    layer = data.draw(st.sampled_from(layers))
    side = data.draw(st.sampled_from(["Inputs", "Outputs"]) if layer.get("Inputs") else st.just("Outputs"))
    layer[side][0]["Dimensions"] = dims
    result = check_cli(["import", "trt-engine", str(_engine(graph))], ok=(0, 2))
    sizes = isinstance(dims, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= -1 for d in dims)
    if not sizes:
        assert result.exit_code == 2 and f"{side}[0].Dimensions: {dims!r} is not a list of sizes" in result.stderr, result.stderr
    else:
        assert "Dimensions" not in result.stderr, result.stderr


@FUZZ
@given(keys=st.lists(st.sampled_from(["seed", "repeats", "name", "threads", "warmup"]), min_size=1, max_size=6),
       nested=st.booleans(), merged=st.booleans())
def test_a_yaml_key_given_twice_is_refused_at_any_depth(keys: list[str], nested: bool, merged: bool) -> None:
    """A mapping's own keys must differ (the last would win silently); a key from a ``<<`` merge may be given again."""
    indent = "  " if nested else ""
    body = "".join(f"{indent}{key}: {k}\n" for k, key in enumerate(keys))
    text = ("base: &b {seed: 0}\n" if merged else "") + ("outer:\n" if nested else "") + (f"{indent}<<: *b\n" if merged else "") + body
    path = _folder() / "w.yaml"
    path.write_text(text)
    twice = len(set(keys)) < len(keys)
    try:
        load_data(path)
    except UserError as exc:
        assert twice and "given twice (first at line" in str(exc), (text, exc)
    else:
        assert not twice, text


@FUZZ
@given(iterations=st.integers(1, 4), kernels_only=st.booleans(), side=st.sampled_from(["base", "cand"]))
def test_a_trace_of_one_forward_is_not_compared(iterations: int, kernels_only: bool, side: str) -> None:
    """However few its events, a profile of a single forward has no spread to compare against: refused by name;
    two or more are compared (two are "too few samples" to the stages, which say so)."""
    folder = _folder()
    spec = TraceSpec(layers=2, iterations=iterations, backward=False, optimizer=False, nccl=False, memcpy=False)
    doc = generate(spec)[0]
    if kernels_only:
        doc = {**doc, "traceEvents": [e for e in doc["traceEvents"] if e.get("cat") == "kernel" or e.get("ph") == "M"
                                      or str(e.get("name", "")).startswith("ProfilerStep#")]}
    odd, other = folder / "odd.json", folder / "other.json"
    write_doc(odd, doc)
    write_doc(other, generate(replace(spec, iterations=4, seed=1))[0])
    pair = [odd, other] if side == "base" else [other, odd]
    result = check_cli(["bisect", *map(str, pair)])
    if iterations == 1:
        assert result.exit_code == 2 and f"{odd}: outcome.latency_samples_ms: 1 forward measured" in result.stderr, result.stderr
    else:
        assert "forward measured" not in result.stderr, result.stderr
