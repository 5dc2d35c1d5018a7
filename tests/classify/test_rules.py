"""The rule table: its arithmetic, and one test per rule that plants its metric past the threshold."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from sparsedebug.classify.rule import STRENGTH_CAP, Rule
from sparsedebug.classify.rules import RULES, RULES_BY_ID, rules_for
from sparsedebug.classify.score import classify_evidence
from sparsedebug.records.classification import Mechanism, NcuEvidence, SmiEvidence
from sparsedebug.records.fingerprint import Fingerprint
from sparsedebug.records.notes import note
from sparsedebug.records.run import FallbackReason, KernelClass, KernelPath, QualityDelta, RunRecord, RunSource, Verdict
from sparsedebug.render.markdown.rules import rules_markdown
from sparsedebug.render.words.classify import RULE_FIX
from sparsedebug.render.words.classify_records import evidence_words
from tests.classify.test_score import make_fingerprint, make_run


def test_table_is_well_formed() -> None:
    assert len(RULES_BY_ID) == len(RULES), "rule ids must be unique"
    for rule in RULES:
        assert rule.id.startswith(rule.mechanism.value + "."), rule.id
        assert rule.weight > 0 and rule.description and RULE_FIX[rule.id] and rule.source
    for mechanism in Mechanism:
        assert rules_for(mechanism), f"{mechanism} has no rule"


def test_contribution_scales_with_margin_and_is_capped() -> None:
    above = Rule(id="x.a", mechanism=Mechanism.COMPUTE, metric="m", source=["s"], op=">", threshold=2.0, unit="u",
                 weight=3.0, description="d")
    assert above.contribution(2.0) == 0.0  # strictly past the threshold
    assert above.contribution(3.0) == pytest.approx(4.5)
    assert above.contribution(100.0) == pytest.approx(3.0 * STRENGTH_CAP)
    below = above.model_copy(update={"op": "<", "threshold": 0.9})
    assert below.contribution(0.95) == 0.0
    assert below.contribution(0.6) == pytest.approx(3.0 * 1.5)
    assert below.contribution(0.0) == pytest.approx(3.0 * STRENGTH_CAP)
    zero = above.model_copy(update={"threshold": 0.0})
    assert zero.contribution(1.0) == pytest.approx(3.0 * STRENGTH_CAP)
    assert zero.contribution(0.0) == 0.0


def test_markdown_has_one_row_per_rule() -> None:
    text = rules_markdown(RULES)
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == len(RULES)
    for rule in RULES:
        assert f"`{rule.id}`" in text
    assert "| --- |" in text


# --------------------------------------------------------------------------- one planted case per rule


@dataclass
class Case:
    """A run (and optional baseline and evidence) in which one rule's metric is past its threshold."""

    run: RunRecord
    baseline: RunRecord | None = None
    fingerprint: Fingerprint | None = None
    ncu: list[NcuEvidence] | None = None
    smi: SmiEvidence | None = None
    extra: dict[str, object] = field(default_factory=dict)


def _imported(run: RunRecord) -> RunRecord:
    run.source = RunSource(kind="torch_trace")
    return run


def _ncu(sm: float, mem: float, spills: float = 0.0) -> list[NcuEvidence]:
    return [
        NcuEvidence(name="nvjet_sm90_hsh", kernel_class=KernelClass.DENSE_TC_GEMM, sm_pct=90, mem_pct=70, spill_requests=0, duration_us=248),
        NcuEvidence(name="sm90_xmma_sparse_gemm", kernel_class=KernelClass.SPARSE_GEMM, sm_pct=sm, mem_pct=mem, spill_requests=spills, duration_us=174),
    ]


def _smi(throttled: int, min_clock: float) -> SmiEvidence:
    return SmiEvidence(source="smi.csv", samples=60, busy_samples=40, throttled_busy_samples=throttled,
                       throttle_reasons={"sw_power_cap": throttled} if throttled else {},
                       min_busy_sm_clock_mhz=min_clock, max_sm_clock_mhz=1980.0, max_clock_source="given")


def _fallback() -> Case:
    run = make_run()
    lo = run.lower.layers[1]
    lo.path, lo.reason = KernelPath.DENSE, FallbackReason.SHAPE_NOT_ALIGNED
    return Case(run)


def _sparse_slower() -> Case:
    run = make_run()
    for k in run.kernel.layers:
        k.samples_ms, k.dense_samples_ms = list(k.dense_samples_ms or []), list(k.samples_ms)
    # ridge 1 FLOP/B: every layer is compute-bound
    return Case(run, fingerprint=make_fingerprint(gemm_gflops=10.0, copy_gbps=10.0))


def _metadata() -> Case:
    run = make_run()
    for lo in run.lower.layers:
        lo.metadata_bytes = lo.value_bytes
    return Case(run)


def _bytes_growth() -> Case:
    run = make_run()
    for lo in run.lower.layers:
        lo.metadata_bytes = 3 * (lo.value_bytes or 0)
    return Case(run, baseline=make_run("baseline"))


def _gather() -> Case:
    run = make_run(intended="2:2:4")
    for lo in run.lower.layers:
        lo.kernels = ["sparsedebug.kernels.VNMWeight.matmul"]
    return Case(run)


def _conversion(run: RunRecord | None = None) -> Case:
    run = run or make_run()
    for lo in run.lower.layers:
        lo.conversions_per_call = 1
    return Case(run)


def _low_intensity() -> Case:
    return Case(make_run(), fingerprint=make_fingerprint(gemm_gflops=1e5, copy_gbps=1.0))


def _copies() -> Case:
    run = make_run()
    run.kernel.by_class_ms = {"copy": 3.0, "sparse_gemm": 7.0}
    return Case(run)


def _span() -> Case:
    run = make_run()
    run.schedule.span_samples_ms = [b * 2 for b in run.schedule.busy_samples_ms]
    return Case(run)


def _host_wait() -> Case:
    run = _imported(make_run())
    run.schedule.host_wait_ms, run.schedule.kernel_wait_ms = 9.0, 1.0
    return Case(run)


def _per_launch() -> Case:
    run = make_run()
    run.schedule.launches_per_iteration = 3
    run.schedule.span_samples_ms = [b + 0.3 for b in run.schedule.busy_samples_ms]
    return Case(run)


def _overhead_regression() -> Case:
    run = make_run()
    run.schedule.span_samples_ms = [s + 1.0 for s in run.schedule.span_samples_ms]
    run.outcome.latency_samples_ms = list(run.schedule.span_samples_ms)
    return Case(run, baseline=make_run("baseline"))


def _oversubscribed() -> Case:
    run = make_run()
    run.schedule.threads = 4
    return Case(run, fingerprint=make_fingerprint(cores=2))


def _tail() -> Case:
    run = make_run()
    lat = run.outcome.latency_samples_ms
    run.outcome.latency_samples_ms = lat[:-2] + [lat[0] * 4, lat[1] * 4]
    return Case(run)


def _dtype_change() -> Case:
    return Case(make_run(dtype="fp16"), baseline=make_run("baseline"))


def _fp32_path() -> Case:
    base, run = _imported(make_run("baseline", dtype="fp16")), _imported(make_run(dtype="fp16"))
    base.lower.layers[0].kernel_class = KernelClass.DENSE_TC_GEMM
    run.lower.layers[0].kernel_class = KernelClass.FP32_GEMM
    return Case(run, baseline=base)


def _error_growth() -> Case:
    run = make_run()
    run.kernel.layers[2].rel_err = 1e-4
    return Case(run, baseline=make_run("baseline"))


def _error_vs_bound() -> Case:
    run = make_run(dtype="fp16")
    run.kernel.layers[0].rel_err = 1e-2
    return Case(run)


def _quality_drop() -> Case:
    run = make_run()
    run.outcome.quality = QualityDelta(cosine=0.9, rel_err=0.4)
    return Case(run, baseline=make_run("baseline"))


def _guardrail() -> Case:
    run = make_run()
    run.verdicts = [Verdict(check="quality_guardrail", status="fail", detail=note("gate.no_evidence", missing="quality"))]
    return Case(run)


def _drift() -> Case:
    run = make_run()
    n = len(run.outcome.latency_samples_ms)
    run.outcome.latency_samples_ms = [2.0 * (1 + 0.2 * i / n) for i in range(n)]
    run.schedule.busy_samples_ms = [1.5 * (1 + 0.2 * i / n) for i in range(n)]
    return Case(run)


def test_latency_drift_with_flat_gpu_busy_time_is_host_side_not_thermal() -> None:
    """The latency drifts upward, but the GPU's busy time does not: the host drifted, the clocks did not."""
    case = _drift()
    n = len(case.run.outcome.latency_samples_ms)
    case.run.source = RunSource(kind="torch_trace")
    case.run.schedule.busy_samples_ms = [1.5] * n
    drift = next(e for e in classify_evidence(case.run).evidence if e.rule == "thermal.latency_drift")
    assert not drift.fired and "host-side" in evidence_words(drift)


def _neighbour_path() -> Case:
    """A layer not declared sparse whose attention kernel became an unfused elementwise sequence, 1 ms slower."""
    base, run = make_run("baseline", intended="dense"), make_run(intended="dense")
    for record, cls in ((base, KernelClass.ATTENTION), (run, KernelClass.ELEMENTWISE)):
        lower = record.lower.layers[0]
        lower.path, lower.kernel_class, lower.reason = KernelPath.DENSE, cls, FallbackReason.INTENDED_DENSE
    run.kernel.layers[0].samples_ms = [s + 1.0 for s in run.kernel.layers[0].samples_ms]
    run.outcome.latency_samples_ms = [s + 1.0 for s in run.outcome.latency_samples_ms]
    return Case(run, baseline=base)


PLANTED: dict[str, Callable[[], Case]] = {
    "compute.neighbour_path_change": _neighbour_path,
    "compute.fallback_flops": _fallback,
    "compute.fallback_time": _fallback,
    "compute.sparse_not_faster": _sparse_slower,
    "compute.ncu_sm_bound": lambda: Case(_imported(make_run()), ncu=_ncu(sm=85, mem=60)),
    "memory.metadata_bytes": _metadata,
    "memory.gather_traffic": _gather,
    "memory.bytes_growth": _bytes_growth,
    "memory.conversion_traffic": _conversion,
    "memory.low_intensity": _low_intensity,
    "memory.copy_time": _copies,
    "memory.ncu_memory_bound": lambda: Case(_imported(make_run()), ncu=_ncu(sm=50, mem=80)),
    "memory.ncu_spills": lambda: Case(_imported(make_run()), ncu=_ncu(sm=65, mem=74, spills=77144)),
    "scheduling.span_vs_busy": _span,
    "scheduling.host_wait": _host_wait,
    "scheduling.per_call_overhead": _per_launch,
    "scheduling.overhead_regression": _overhead_regression,
    "scheduling.per_call_conversion": _conversion,
    "scheduling.oversubscription": _oversubscribed,
    "scheduling.tail_spread": _tail,
    "precision.dtype_change": _dtype_change,
    "precision.error_growth": _error_growth,
    "precision.error_vs_roundoff": _error_vs_bound,
    "precision.quality_drop": _quality_drop,
    "precision.guardrail": _guardrail,
    "thermal.throttle_time": lambda: Case(_imported(make_run()), smi=_smi(throttled=8, min_clock=1950)),
    "thermal.clock_drop": lambda: Case(_imported(make_run()), smi=_smi(throttled=0, min_clock=1500)),
    "thermal.latency_drift": _drift,
}


def test_every_rule_has_a_planted_case() -> None:
    assert set(PLANTED) == set(RULES_BY_ID)


def _classify(case: Case) -> dict[str, bool]:
    result = classify_evidence(
        case.run, baseline=case.baseline, fingerprint=case.fingerprint, ncu=case.ncu, ncu_source="k.csv" if case.ncu else None, smi=case.smi
    )
    return {line.rule: line.fired for line in result.evidence}


@pytest.mark.parametrize("rule_id", sorted(PLANTED))
def test_rule_fires_on_its_planted_case(rule_id: str) -> None:
    fired = _classify(PLANTED[rule_id]())
    assert fired.get(rule_id) is True, (rule_id, fired)


def test_fp32_kernel_path_change_counts_as_precision_change() -> None:
    assert _classify(_fp32_path())["precision.dtype_change"] is True


def test_fp32_path_of_a_layer_declared_fp32_is_not_a_precision_change() -> None:
    case = _fp32_path()
    for run in (case.run, case.baseline):
        assert run is not None
        run.graph.layers[0].dtype = "fp32"
        run.kernel.layers[0].precision = "fp32"
    assert _classify(case)["precision.dtype_change"] is False


def test_condition_shared_with_the_baseline_does_not_score() -> None:
    case = _span()
    case.baseline = _span().run
    case.baseline.name = "baseline"
    result = classify_evidence(case.run, baseline=case.baseline)
    line = next(e for e in result.evidence if e.rule == "scheduling.span_vs_busy")
    assert not line.fired and "baseline shows it too" in evidence_words(line)
    # clearly worse than the baseline: scores again
    case.run.schedule.span_samples_ms = [b * 4 for b in case.run.schedule.busy_samples_ms]
    result = classify_evidence(case.run, baseline=case.baseline)
    assert next(e for e in result.evidence if e.rule == "scheduling.span_vs_busy").fired


@pytest.mark.parametrize("rule_id", sorted(PLANTED))
def test_rule_stays_quiet_on_the_clean_counterpart(rule_id: str) -> None:
    """The same evidence, un-planted, does not fire the rule (or cannot be evaluated)."""
    case = PLANTED[rule_id]()
    clean = Case(
        make_run(),
        baseline=make_run("baseline") if case.baseline is not None else None,
        fingerprint=make_fingerprint(gemm_gflops=100.0, copy_gbps=100.0) if case.fingerprint is not None else None,
        ncu=_ncu(sm=40, mem=45) if case.ncu is not None else None,
        smi=_smi(throttled=0, min_clock=1980) if case.smi is not None else None,
    )
    if case.run.source.kind != "replay":
        _imported(clean.run)
        if clean.baseline is not None:
            _imported(clean.baseline)
    fired = _classify(clean)
    assert fired.get(rule_id, False) is False, (rule_id, fired)


def test_the_docs_rule_table_is_the_generated_one() -> None:
    """The documentation's rule table is rules_markdown(RULES) itself, filled in when the site is built: a new rule lands
    in the docs too (docs/hooks.py; tests/test_docs.py checks every generated part the pages ask for)."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "steps" / "classify.md").read_text()
    assert "<!-- generated: classify-rules -->" in page and "| rule | mechanism |" not in page
    assert rules_markdown(RULES).count("\n| `") >= 20
