"""Classification over synthetic runs (one planted change each) and the real H200 artifacts."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from sparsedebug.classify.rules import RULES
from sparsedebug.classify.score import classify_evidence, classify_run
from sparsedebug.core.dtypes import canonical_dtype, unit_roundoff
from sparsedebug.records.classification import Classification, Fix, Mechanism, NcuEvidence, SmiEvidence
from sparsedebug.records.fingerprint import Calibration, CpuInfo, Fingerprint, GpuProbe, NumpyInfo, PlatformInfo, PythonInfo
from sparsedebug.records.run import (
    FallbackReason,
    GraphLayer,
    GraphStage,
    KernelClass,
    KernelLayer,
    KernelPath,
    KernelStage,
    LowerLayer,
    LowerStage,
    OpKind,
    OutcomeStage,
    QualityDelta,
    RunRecord,
    RunSource,
    ScheduleStage,
    TimeWindow,
)
from sparsedebug.render.words.classify_records import evidence_words
from sparsedebug.render.words.mechanisms_records import fix_words, margin_words, proof_words
from sparsedebug.render.words.notes import say
from sparsedebug.sources.evidence import AttachedEvidence
from tests.conftest import FIXTURES

H200 = FIXTURES / "h200"
TOKENS = 64
SHAPES = {"l0": (256, 256), "l1": (1024, 256), "l2": (256, 1024)}
SAMPLES = 20


def _samples(center: float, n: int = SAMPLES, seed: int = 0) -> list[float]:
    """Deterministic timing samples: ``center`` with 1% jitter."""
    rng = np.random.default_rng(seed)
    return [float(x) for x in center * (1.0 + 0.01 * rng.standard_normal(n))]


def make_fingerprint(cores: int = 2, gemm_gflops: float = 100.0, copy_gbps: float = 10.0) -> Fingerprint:
    """A fingerprint with a calibration (roofline ridge = gemm_gflops / copy_gbps FLOP/B)."""
    return Fingerprint(
        created_at="2026-11-30T00:00:00Z",
        seed=0,
        python=PythonInfo(version="3.11", implementation="CPython"),
        platform=PlatformInfo(system="Linux", release="6", machine="x86_64"),
        cpu=CpuInfo(model="test cpu", logical_cores=cores, flags=[]),
        numpy=NumpyInfo(version="2", blas=[]),
        thread_env={},
        gpu_probe=GpuProbe(status="not_on_path"),
        calibration=Calibration(
            gemm_gflops=gemm_gflops,
            copy_gbps=copy_gbps,
            gemm_shape=[1024, 1024, 1024],
            copy_bytes=1,
            rounds=1,
            gemm_samples_ms=[1.0],
            copy_samples_ms=[1.0],
        ),
    )


def make_run(name: str = "candidate", dtype: str = "fp32", intended: str = "2:4") -> RunRecord:
    """A clean replay-like run: three 2:4 linear layers, all sparse, tight timings, exact numerics."""
    graph, lower, kernel = [], [], []
    for i, (layer, (out, inn)) in enumerate(SHAPES.items()):
        flops = 2.0 * TOKENS * out * inn
        nbytes = 4.0 * (out * inn + TOKENS * (out + inn))
        graph.append(
            GraphLayer(name=layer, op=OpKind.LINEAR, weight_shape=[out, inn], dtype=dtype, intended=intended, flops=flops, bytes=nbytes)
        )
        lower.append(
            LowerLayer(
                name=layer,
                path=KernelPath.SPARSE,
                conversion_ms=0.5,
                conversions_per_call=0,
                value_bytes=out * inn * 2,
                metadata_bytes=out * inn // 8,
                dense_bytes=out * inn * 4,
            )
        )
        ms = flops / 50e9 * 1e3
        kernel.append(
            KernelLayer(
                name=layer,
                samples_ms=_samples(ms, seed=i),
                dense_samples_ms=_samples(ms * 1.3, seed=10 + i),
                precision=dtype,
                rel_err=1e-7,
            )
        )
    busy = [sum(k.samples_ms[j] for k in kernel) for j in range(SAMPLES)]
    span = [b * 1.02 for b in busy]
    return RunRecord(
        name=name,
        source=RunSource(kind="replay"),
        graph=GraphStage(layers=graph, tokens=TOKENS),
        lower=LowerStage(backend="cpu-numpy", layers=lower),
        kernel=KernelStage(layers=kernel),
        schedule=ScheduleStage(span_samples_ms=span, busy_samples_ms=busy, threads=2, launches_per_iteration=3),
        outcome=OutcomeStage(latency_samples_ms=list(span), quality=QualityDelta(cosine=0.95, rel_err=0.3)),
    )


def _shift_overhead(run: RunRecord, extra_ms: float) -> None:
    run.schedule.span_samples_ms = [s + extra_ms for s in run.schedule.span_samples_ms]
    run.outcome.latency_samples_ms = list(run.schedule.span_samples_ms)


def _fired(result: Classification) -> set[str]:
    return {e.rule for e in result.evidence if e.fired}


# --------------------------------------------------------------------------- unit helpers


def test_precision_names_and_roundoff() -> None:
    assert canonical_dtype("torch.float16") == "fp16"
    assert canonical_dtype("bfloat16") == "bf16"
    assert canonical_dtype("FP32") == "fp32"
    assert canonical_dtype("int4") is None
    assert unit_roundoff("fp16") == 2.0**-11
    assert unit_roundoff("bf16") == 2.0**-8
    assert unit_roundoff("weird") is None


# --------------------------------------------------------------------------- clean run


def test_clean_pair_supports_nothing_and_names_missing_thermal_evidence() -> None:
    result = classify_evidence(make_run(), baseline=make_run("baseline"), fingerprint=make_fingerprint(gemm_gflops=100, copy_gbps=100))
    assert _fired(result) == set()
    assert result.winner is None and result.fix is None and result.proof is None
    assert [s.score for s in result.scores] == [0.0] * 5
    thermal = result.missing_for(Mechanism.THERMAL)
    assert thermal and "CPU frequency" in say(thermal[0].reason) + say(thermal[0].capture)
    # the thermal drift rule was still evaluated on the 20 in-order samples
    assert any(e.rule == "thermal.latency_drift" and e.value is not None for e in result.evidence)


def test_every_rule_is_accounted_for_once() -> None:
    result = classify_evidence(make_run())
    seen = [e.rule for e in result.evidence] + [r for m in result.missing_evidence for r in m.rules]
    assert sorted(seen) == sorted(rule.id for rule in RULES)


def test_without_baseline_comparison_rules_ask_for_one() -> None:
    result = classify_evidence(make_run())
    asked = {r for m in result.missing_evidence if "--baseline" in say(m.capture) for r in m.rules}
    assert {"scheduling.overhead_regression", "precision.dtype_change", "precision.error_growth", "precision.quality_drop"} <= asked


def test_replay_without_calibration_asks_for_freeze_calibrate() -> None:
    result = classify_evidence(make_run())
    memory = result.missing_for(Mechanism.MEMORY)
    assert any("freeze --calibrate" in say(m.capture) and "memory.low_intensity" in m.rules for m in memory)
    assert result.roofline is None and result.layers == []


# --------------------------------------------------------------------------- planted mechanisms


def test_planted_per_call_conversion_is_scheduling_with_conversion_fix() -> None:
    base, cand = make_run("baseline"), make_run()
    for lo in cand.lower.layers:
        lo.conversions_per_call = 1
    _shift_overhead(cand, sum(lo.conversion_ms or 0 for lo in cand.lower.layers))
    result = classify_evidence(cand, baseline=base, fingerprint=make_fingerprint())
    assert result.winner == Mechanism.SCHEDULING
    assert {"scheduling.per_call_conversion", "scheduling.overhead_regression"} <= _fired(result)
    assert result.fix is not None
    assert (result.fix.kind, result.fix.knob, result.fix.value, result.fix.direction) == ("knob", "conversion", "once", "down")


def test_planted_oversubscription_is_scheduling_with_threads_fix() -> None:
    base, cand = make_run("baseline"), make_run()
    cand.schedule.threads = 8
    samples = cand.outcome.latency_samples_ms
    cand.outcome.latency_samples_ms = samples[:-3] + [s * 3 for s in samples[-3:]]
    result = classify_evidence(cand, baseline=base, fingerprint=make_fingerprint(cores=2))
    assert result.winner == Mechanism.SCHEDULING
    assert "scheduling.oversubscription" in _fired(result)
    assert result.fix is not None
    assert (result.fix.kind, result.fix.knob, result.fix.value) == ("knob", "threads", 2)


def test_planted_fallback_of_largest_layer_is_compute_with_pad_fix() -> None:
    base, cand = make_run("baseline"), make_run()
    for name in ("l1", "l2"):
        lo = next(lo for lo in cand.lower.layers if lo.name == name)
        lo.path, lo.reason = KernelPath.DENSE, FallbackReason.SHAPE_NOT_ALIGNED
        k = next(k for k in cand.kernel.layers if k.name == name)
        k.samples_ms = list(k.dense_samples_ms or [])
    result = classify_evidence(cand, baseline=base, fingerprint=make_fingerprint())
    assert result.winner == Mechanism.COMPUTE
    assert {"compute.fallback_flops", "compute.fallback_time"} <= _fired(result)
    assert result.fix is not None
    assert (result.fix.kind, result.fix.action) == ("layer", "pad")
    assert result.fix.layer in {"l1", "l2"}
    proof = proof_words(result)
    assert proof is not None and ("l1" in proof or "l2" in proof)


def test_fallback_for_other_reasons_suggests_exclude() -> None:
    cand = make_run()
    lo = cand.lower.layers[1]
    lo.path, lo.reason = KernelPath.DENSE, FallbackReason.PATTERN_NOT_COMPLIANT
    result = classify_evidence(cand)
    assert result.winner == Mechanism.COMPUTE
    assert result.fix is not None and (result.fix.kind, result.fix.layer, result.fix.action) == ("layer", "l1", "exclude")


def test_dtype_fallback_suggests_casting_to_the_sparse_layers_dtype() -> None:
    cand = make_run(dtype="fp16")
    lo = cand.lower.layers[1]
    lo.path, lo.reason = KernelPath.DENSE, FallbackReason.DTYPE_UNSUPPORTED
    cand.graph.layers[1].dtype = "fp32"
    sparse_dtypes = {g.dtype for g, lw in zip(cand.graph.layers, cand.lower.layers) if lw.path == KernelPath.SPARSE}
    assert len(sparse_dtypes) == 1 and "fp32" not in sparse_dtypes
    result = classify_evidence(cand)
    assert result.winner == Mechanism.COMPUTE
    assert result.fix is not None
    assert (result.fix.kind, result.fix.layer, result.fix.action, result.fix.value) == ("layer", "l1", "cast", sparse_dtypes.pop())


def test_planted_small_blocks_are_memory_with_block_fix() -> None:
    base, cand = make_run("baseline", intended="32:2:4"), make_run(intended="2:2:4")
    for lo in cand.lower.layers:
        lo.metadata_bytes = lo.value_bytes
    result = classify_evidence(cand, baseline=base, fingerprint=make_fingerprint())
    assert result.winner == Mechanism.MEMORY
    assert result.fix is not None
    assert (result.fix.kind, result.fix.layer, result.fix.value, result.fix.metric) == ("block", None, 8, "busy_p50_ms")


def test_planted_bf16_is_precision_with_fp32_fix() -> None:
    base, cand = make_run("baseline"), make_run(dtype="bf16")
    for k in cand.kernel.layers:
        k.rel_err = 3e-3
    cand.outcome.quality = QualityDelta(cosine=0.90, rel_err=0.4)
    result = classify_evidence(cand, baseline=base, fingerprint=make_fingerprint())
    assert result.winner == Mechanism.PRECISION
    assert {"precision.dtype_change", "precision.error_growth", "precision.quality_drop"} <= _fired(result)
    # bf16 error within bf16 input rounding: not a low-precision accumulation
    assert "precision.error_vs_roundoff" not in _fired(result)
    assert result.fix is not None and (result.fix.kind, result.fix.knob, result.fix.value) == ("knob", "precision", "fp32")


def test_planted_fp16_accumulation_error_fires_roundoff_rule() -> None:
    cand = make_run(dtype="fp16")
    for k in cand.kernel.layers:
        k.rel_err = 2e-2  # ~ u_fp16 * sqrt(K): fp16 accumulation, not fp32
    result = classify_evidence(cand)
    assert "precision.error_vs_roundoff" in _fired(result)
    assert result.winner == Mechanism.PRECISION


def test_quality_drop_with_different_intent_is_gated() -> None:
    base, cand = make_run("baseline", intended="dense"), make_run()
    cand.outcome.quality = QualityDelta(cosine=0.5, rel_err=0.9)
    result = classify_evidence(cand, baseline=base)
    line = next(e for e in result.evidence if e.rule == "precision.quality_drop")
    assert not line.fired and "pruning" in evidence_words(line)


def test_latency_drift_is_thermal_for_replay() -> None:
    cand = make_run()
    n = len(cand.outcome.latency_samples_ms)
    cand.outcome.latency_samples_ms = [1.0 + 0.3 * i / (n - 1) for i in range(n)]
    result = classify_evidence(cand)
    assert result.winner == Mechanism.THERMAL
    assert result.fix is not None and "governor" in fix_words(result.fix)


def test_no_drift_when_trend_is_not_significant() -> None:
    cand = make_run()
    cand.outcome.latency_samples_ms = [1.0, 1.4] * 10
    result = classify_evidence(cand)
    line = next(e for e in result.evidence if e.rule == "thermal.latency_drift")
    assert not line.fired and "no significant upward trend" in evidence_words(line)


def test_ncu_latency_bound_kernel_is_not_memory_bound() -> None:
    cand = make_run()
    cand.source = RunSource(kind="torch_trace")
    ncu = [NcuEvidence(name="sm90_xmma_sparse_gemm", kernel_class=KernelClass.SPARSE_GEMM, sm_pct=30.0, mem_pct=45.0, spill_requests=0.0, duration_us=10.0)]
    result = classify_evidence(cand, ncu=ncu, ncu_source="k.csv")
    line = next(e for e in result.evidence if e.rule == "memory.ncu_memory_bound")
    assert line.value == pytest.approx(15.0) and not line.fired and "latency-bound" in evidence_words(line)


def test_imported_run_without_ncu_or_smi_names_the_captures() -> None:
    cand = make_run()
    cand.source = RunSource(kind="torch_trace")
    result = classify_evidence(cand)
    captures = " ".join(say(m.capture) for m in result.missing_evidence)
    assert "nvidia-smi --query-gpu=" in captures and "-lms 250" in captures
    assert "ncu --section SpeedOfLight" in captures
    assert any("--gpu" in say(m.capture) for m in result.missing_for(Mechanism.MEMORY))


def test_smi_evidence_brings_thermal_into_ranking() -> None:
    cand = make_run()
    cand.source = RunSource(kind="torch_trace")
    smi = SmiEvidence(
        source="smi.csv", samples=50, busy_samples=40, throttled_busy_samples=12,
        throttle_reasons={"sw_power_cap": 12}, min_busy_sm_clock_mhz=1300.0, max_sm_clock_mhz=1980.0, max_clock_source="given",
    )
    result = classify_evidence(cand, smi=smi)
    assert result.winner == Mechanism.THERMAL
    assert (proof_words(result) or "").startswith("smi.csv")
    assert result.fix is not None and "nvidia-smi -lgc" in fix_words(result.fix) and result.fix.direction == "up"


def test_classification_round_trips_as_json() -> None:
    result = classify_evidence(make_run(), baseline=make_run("b"), fingerprint=make_fingerprint())
    data = json.loads(result.model_dump_json())
    again = Classification.model_validate(data)
    assert again == result
    assert {s["mechanism"] for s in data["scores"]} == {m.value for m in Mechanism}
    assert [s["rank"] for s in data["scores"]] == [1, 2, 3, 4, 5]


# --------------------------------------------------------------------------- real H200 artifacts


@pytest.fixture(scope="module")
def h200_pair() -> tuple[RunRecord, RunRecord]:
    from sparsedebug.sources.importers.trace.importer import import_trace

    return import_trace(H200 / "trace_sparse_mlp_T2048.json.gz"), import_trace(H200 / "trace_dense_T2048.json.gz")


def test_h200_eager_sparse_mlp_vs_dense_is_scheduling(h200_pair: tuple[RunRecord, RunRecord]) -> None:
    sparse, dense = h200_pair
    result = classify_run(sparse, baseline=dense)
    assert result.winner == Mechanism.SCHEDULING
    assert {"scheduling.span_vs_busy", "scheduling.host_wait", "scheduling.overhead_regression"} <= _fired(result)
    span = next(e for e in result.evidence if e.rule == "scheduling.span_vs_busy")
    assert span.value is not None and 2.0 < span.value < 2.8  # ~12.3 ms span vs ~5.2 ms busy per forward
    assert "trace_sparse_mlp_T2048.json.gz" in (proof_words(result) or "")
    assert result.fix is not None and result.fix.kind == "advice" and "CUDA graph" in fix_words(result.fix)
    # the GPU name comes from the trace: the H200 peak roofline applies, the MLP GEMMs are compute-bound
    assert result.roofline is not None and result.roofline.device == "NVIDIA H200 SXM"
    assert all(li.bound == "compute" for li in result.layers)
    assert any("nvidia-smi" in say(m.capture) for m in result.missing_for(Mechanism.THERMAL))


def test_h200_smi_power_cap_brings_thermal_evidence(h200_pair: tuple[RunRecord, RunRecord]) -> None:
    from sparsedebug.sources.importers.ncu import load_ncu
    from sparsedebug.sources.importers.nvidia_smi import load_smi

    sparse, dense = h200_pair
    smi = load_smi(H200 / "nvidia_smi_short.csv")
    ncu = load_ncu(H200 / "ncu_dense_vs_sparse_11008x4096x2048.csv")
    # the short log was captured two minutes after these eager traces: it covers neither run's window, so it
    # brings no thermal verdict (issue 24: it used to make thermal "supported" for any pair it was attached to)
    for offset, why in ((None, "cannot be aligned"), (0.0, "no sample inside the run's window")):
        result = classify_run(sparse, baseline=dense, evidence=AttachedEvidence(smi=smi, ncu=ncu, smi_utc_offset_h=offset))
        thermal = next(s for s in result.scores if s.mechanism == Mechanism.THERMAL)
        assert thermal.score == 0 and thermal.status != "supported"
        lines = {e.rule: e for e in result.evidence_for(Mechanism.THERMAL)}
        assert not lines["thermal.throttle_time"].fired and why in evidence_words(lines["thermal.throttle_time"])
        assert lines["thermal.clock_drop"].value is None and why in evidence_words(lines["thermal.clock_drop"])
    # the real ncu file: the sparse GEMM spills (memory evidence), but scheduling still wins
    assert "memory.ncu_spills" in _fired(result)
    assert result.winner == Mechanism.SCHEDULING
    assert result.missing_for(Mechanism.THERMAL) == [m for m in result.missing_evidence if m.mechanism == Mechanism.THERMAL]


def test_h200_cuda_graph_sparse_vs_dense_is_not_scheduling() -> None:
    from sparsedebug.sources.importers.trace.importer import import_trace

    sparse = import_trace(H200 / "trace_sparse_mlp_T2048_cudagraph.json.gz")
    dense = import_trace(H200 / "trace_dense_T2048_cudagraph.json.gz")
    result = classify_run(sparse, baseline=dense)
    assert "scheduling.overhead_regression" not in _fired(result)
    assert "scheduling.span_vs_busy" not in _fired(result)


def test_fixture_paths_exist() -> None:
    for name in ("trace_sparse_mlp_T2048.json.gz", "trace_dense_T2048.json.gz", "nvidia_smi_short.csv"):
        assert (H200 / name).is_file(), Path(name)


# --------------------------------------------------------------------------- planted replays


PLANTED = FIXTURES / "workloads" / "planted"


@pytest.fixture(scope="module")
def machine() -> Fingerprint:
    """This machine's fingerprint with its calibrated roofline (what `freeze --calibrate` records)."""
    from sparsedebug.freeze.fingerprint import collect

    return collect(calibrate_machine=True)


PLANTED_PAIRS = {
    "scheduling_per_call": "base", "scheduling_threads": "base", "memory_small_blocks": "base", "precision_bf16": "base",
    "compute_fallback": "compute_base",
}


@pytest.fixture(scope="module")
def planted_runs(machine: Fingerprint) -> dict[str, tuple[RunRecord, RunRecord]]:
    """Each planted candidate with its baseline, replayed as classify replays two workloads: in one interleaved
    session (the scheduling_threads pair runs different thread counts, so its sides are replayed one after the other)."""
    from sparsedebug.sources.replay.replay import replay_pair
    from sparsedebug.sources.workload.load import load_workload

    runs: dict[str, tuple[RunRecord, RunRecord]] = {}
    for name, base_name in PLANTED_PAIRS.items():
        workload = load_workload(PLANTED / f"{name}.yaml")
        if name == "scheduling_threads":
            cores = machine.cpu.logical_cores or 2
            workload = workload.model_copy(update={"threads": 2 * cores})
        base = load_workload(PLANTED / f"{base_name}.yaml")
        runs[name] = replay_pair(base, workload, base_path=PLANTED / f"{base_name}.yaml", cand_path=PLANTED / f"{name}.yaml")
    return runs


@pytest.mark.parametrize(
    ("candidate", "mechanism", "fix_kind", "fix_knob"),
    [
        ("scheduling_per_call", Mechanism.SCHEDULING, "knob", "conversion"),
        ("scheduling_threads", Mechanism.SCHEDULING, "knob", "threads"),
        ("memory_small_blocks", Mechanism.MEMORY, "block", None),
        ("precision_bf16", Mechanism.PRECISION, "knob", "precision"),
        ("compute_fallback", Mechanism.COMPUTE, "layer", None),
    ],
)
def test_planted_replay_pair_classifies(
    planted_runs: dict[str, tuple[RunRecord, RunRecord]], machine: Fingerprint, candidate: str, mechanism: Mechanism, fix_kind: str,
    fix_knob: str | None,
) -> None:
    base, cand = planted_runs[candidate]
    result = classify_run(cand, baseline=base, fingerprint=machine)
    assert result.winner == mechanism, [(s.mechanism, s.score) for s in result.scores]
    assert result.fix is not None and result.fix.kind == fix_kind and result.fix.knob == fix_knob
    assert result.roofline is not None and result.roofline.source == "calibration"
    assert f"{candidate}.yaml" in (proof_words(result) or "")


def test_planted_fixes_name_the_planted_knob_values(planted_runs: dict[str, tuple[RunRecord, RunRecord]], machine: Fingerprint) -> None:
    def fix_of(name: str) -> Fix | None:
        base, cand = planted_runs[name]
        return classify_run(cand, baseline=base, fingerprint=machine).fix

    per_call, threads, blocks = fix_of("scheduling_per_call"), fix_of("scheduling_threads"), fix_of("memory_small_blocks")
    assert per_call is not None and per_call.value == "once"
    assert threads is not None and threads.value == machine.cpu.logical_cores
    assert blocks is not None and blocks.value == 16 and blocks.layer is None
    bf16, fallback = fix_of("precision_bf16"), fix_of("compute_fallback")
    assert bf16 is not None and bf16.value == "fp32"
    assert fallback is not None and (fallback.layer, fallback.action) == ("fc0", "exclude")


def test_planted_baseline_against_itself_supports_nothing(planted_runs: dict[str, tuple[RunRecord, RunRecord]], machine: Fingerprint) -> None:
    base = planted_runs["memory_small_blocks"][0]
    result = classify_run(base, baseline=base, fingerprint=machine)
    assert result.winner is None, [(e.rule, e.value) for e in result.evidence if e.fired]


def test_measure_metric_reads_what_fixes_name() -> None:
    from sparsedebug.classify.score import measure_metric

    run = make_run()
    assert measure_metric(run, "latency_p50_ms") == pytest.approx(float(np.median(run.outcome.latency_samples_ms)))
    assert measure_metric(run, "busy_p50_ms") == pytest.approx(float(np.median(run.schedule.busy_samples_ms)))
    assert measure_metric(run, "max_rel_err") == pytest.approx(1e-7)
    assert measure_metric(run, "span_busy_ratio") == pytest.approx(1.02, rel=1e-3)
    assert measure_metric(run, "fallback_flop_share") == 0.0
    run.lower.layers[1].path, run.lower.layers[1].reason = KernelPath.DENSE, FallbackReason.SHAPE_NOT_ALIGNED
    assert measure_metric(run, "fallback_flop_share") == pytest.approx(1024 / (256 + 1024 + 1024))
    assert measure_metric(run, "smi_min_clock_ratio") is None  # needs an nvidia-smi log
    assert measure_metric(run, "no_such_metric") is None


def test_every_fix_metric_is_measurable() -> None:
    """Each fix the engine can suggest names a metric measure_metric knows (or an artifact metric)."""
    import re

    from sparsedebug.classify.score import EXTRA_METRICS, STATE_METRICS

    package = Path(__file__).resolve().parents[2] / "sparsedebug" / "classify"
    source = "".join(p.read_text() for p in sorted(package.glob("*.py")))
    named = set(re.findall(r'metric="([a-z0-9_]+)"', source))
    assert named, "no Fix metric found"
    assert named <= set(EXTRA_METRICS) | set(STATE_METRICS) | {"smi_min_clock_ratio"}


def test_non_finite_metric_is_reported_not_scored() -> None:
    cand = make_run()
    cand.kernel.layers[0].rel_err = float("nan")
    result = classify_evidence(cand)
    line = next(e for e in result.evidence if e.rule == "precision.error_vs_roundoff")
    assert line.value is None and not line.fired and "not a finite number" in evidence_words(line)
    json.loads(result.model_dump_json())  # still valid JSON


def test_smi_log_without_reasons_column_asks_for_it(tmp_path: Path) -> None:
    from sparsedebug.sources.importers.nvidia_smi import load_smi

    log = tmp_path / "smi.csv"
    log.write_text(
        "timestamp, clocks.current.sm [MHz], utilization.gpu [%]\n"
        "2026/11/29 23:42:23.307, 1980 MHz, 50 %\n"
        "2026/11/29 23:42:23.557, 1500 MHz, 90 %\n"
    )
    cand = make_run()
    start = datetime(2026, 11, 29, 23, 42, 23, 400000, tzinfo=UTC).timestamp()
    cand.source = RunSource(kind="torch_trace", window=TimeWindow(start_utc_s=start, end_utc_s=start + 0.3, source="test"))
    result = classify_run(cand, evidence=AttachedEvidence(smi=load_smi(log), smi_utc_offset_h=0.0))
    assert any("thermal.throttle_time" in m.rules and "clocks_event_reasons" in say(m.reason) for m in result.missing_evidence)
    drop = next(e for e in result.evidence if e.rule == "thermal.clock_drop")
    assert drop.fired and drop.value == pytest.approx(1500 / 1980)


def test_smi_log_does_not_score_a_cpu_replay() -> None:
    smi = SmiEvidence(
        source="smi.csv", samples=50, busy_samples=40, throttled_busy_samples=12,
        throttle_reasons={"sw_power_cap": 12}, min_busy_sm_clock_mhz=1300.0, max_sm_clock_mhz=1980.0, max_clock_source="given",
    )
    result = classify_evidence(make_run(), smi=smi)
    lines = [e for e in result.evidence if e.rule in ("thermal.throttle_time", "thermal.clock_drop")]
    assert len(lines) == 2 and all(e.value is None and "ran on the CPU" in evidence_words(e) for e in lines)
    assert result.winner is None


def test_margin_is_a_ratio_of_scores_and_says_so() -> None:
    base, cand = make_run("baseline"), make_run(dtype="bf16")
    for k in cand.kernel.layers:
        k.rel_err = 3e-3
    cand.schedule.threads = 4  # oversubscribed: scheduling scores too, so there is a runner-up
    result = classify_evidence(cand, baseline=base, fingerprint=make_fingerprint(cores=2))
    first, second = result.scores[0], result.scores[1]
    assert result.winner == first.mechanism and second.score > 0
    assert result.margin == pytest.approx(first.score / second.score)
    assert margin_words(result) == f"{first.score / second.score:.2f} times the runner-up's score"
    alone = classify_evidence(make_run(dtype="bf16"), baseline=make_run("baseline"))
    assert alone.margin is None and margin_words(alone) == "no other mechanism scored"
