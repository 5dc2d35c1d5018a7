"""The lower stage on its own: the shared path predicates, and agreement with the fallback counter."""

from __future__ import annotations

from rich.console import Console

from sparsedebug.locate.lower import lower_stage
from sparsedebug.locate.paths import compare_paths
from sparsedebug.records.run import FallbackReason, KernelClass, KernelPath, RunRecord
from sparsedebug.render.terminal.importers import fallback_table
from sparsedebug.render.words.locate_text import finding_text
from tests.locate.test_walk import MLP, SPARSE, PathSpec, make_run


def _with_kernels(run: RunRecord, name: str, kernels: list[str]) -> RunRecord:
    out = run.model_copy(deep=True)
    layer = next(lo for lo in out.lower.layers if lo.name == name)
    layer.kernels = kernels
    return out


def test_a_neighbour_that_also_runs_an_fp32_kernel_changed_path() -> None:
    # Same path and dominant class, but the attention now also launches an fp32 SGEMM:
    # the neighbour was pushed partly onto the slow path. bisect and `fallbacks` both say so.
    base = _with_kernels(make_run("b", seed=1), "layers.0.attn", ["flash_fwd_kernel"])
    cand = _with_kernels(make_run("c", seed=2), "layers.0.attn", ["flash_fwd_kernel", "ampere_sgemm_128x64_tn"])
    stage = lower_stage(base, cand)
    assert stage.status == "divergent"
    [finding] = [f for f in stage.layers if f.regression]
    assert finding.layer == "layers.0.attn" and finding.kind == "path_changed"
    assert "dense/attention [attention] -> dense/attention [attention, fp32_gemm]" in finding_text(finding)
    report = compare_paths(base, cand)
    assert [c.layer for c in report.unintended] == ["layers.0.attn"]
    # the row shows what changed: the classes the layer ran, not the same class twice
    console = Console(width=200, record=True)
    console.print(fallback_table(report))
    assert "attention+fp32_gemm" in console.export_text()


def test_same_kernels_under_other_names_is_no_change() -> None:
    base = _with_kernels(make_run("b", seed=1), "layers.0.attn", ["flash_fwd_kernel"])
    cand = _with_kernels(make_run("c", seed=2), "layers.0.attn", ["fmha_cutlassF_f16_aligned_64x64_rf_sm80"])
    assert lower_stage(base, cand).status == "same"
    assert compare_paths(base, cand).changed == []


def test_fallback_and_intent_follow_the_shared_predicates() -> None:
    fallback = "layers.1.mlp.down"
    path: dict[str, PathSpec] = {n: SPARSE for n in MLP}
    path[fallback] = (KernelPath.DENSE, FallbackReason.SHAPE_NOT_ALIGNED, KernelClass.DENSE_TC_GEMM)
    intended = {n: "2:4" for n in MLP}
    stage = lower_stage(make_run("b", seed=1), make_run("c", seed=2, intended=intended, path=path))
    assert stage.status == "divergent"
    assert [(f.layer, f.kind, f.reason) for f in stage.layers if f.regression] == [(fallback, "fallback", "shape_not_aligned")]
    assert sorted(f.layer for f in stage.layers if f.intended) == sorted(n for n in MLP if n != fallback)
    report = compare_paths(make_run("b", seed=1), make_run("c", seed=2, intended=intended, path=path))
    assert [f.layer for f in report.dense_fallbacks] == [fallback]
    # Declared sparse on every side, all sparse: intent only.
    all_sparse = make_run("c", seed=2, intended=intended, path={n: SPARSE for n in MLP})
    assert lower_stage(make_run("b", seed=1), all_sparse).status == "expected"
