"""Shrinking keeps the backend's treatment of every shape, and the reproducer is confirmed before it is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.reduce import reduce as reduce_module
from sparsedebug.reduce.treatment import scale_keeping_treatment, treatment, treatment_change
from sparsedebug.sources.replay.replay import plan
from sparsedebug.sources.workload.load import load_workload, revalidate
from sparsedebug.sources.workload.schema import Workload, save_workload
from tests.conftest import invoke
from tests.support.builders import mlp_chain


def _cusparselt(widths: list[int]) -> Workload:
    return mlp_chain("good", widths, sequence=16, sparsity="2:4", backend="h200-cusparselt", precision="fp16", repeats=3)


def _fp32(workload: Workload, layer: str) -> Workload:
    layers = [l.model_copy(update={"dtype": "fp32"}) if l.name == layer else l for l in workload.layers]
    return revalidate(workload.model_copy(update={"name": "bad", "layers": layers}))


def test_halving_an_aligned_width_into_an_unaligned_one_is_refused() -> None:
    aligned = _cusparselt([128, 1376, 128])  # 1376 = 16 x 86 and 688 = 16 x 43: one halving is fine
    once = scale_keeping_treatment(aligned, 2)
    assert [l.shape for l in once.layers if l.shape] == [[688, 64], [64, 688]]
    with pytest.raises(UserError, match=r"change how the backend treats a shape: fc0 \[344, 32\] in fp16 would be dense:shape_not_aligned"):
        scale_keeping_treatment(once, 2)  # 344 is not a multiple of 16


def test_treatment_covers_every_precision_and_dense_layers() -> None:
    good = _cusparselt([64, 128, 64])
    decided = treatment(good)
    assert {precision for _, precision in decided} == {"fp32", "fp16", "bf16"}
    assert decided[("fc0", "fp32")] == "dense:dtype_unsupported" and decided[("fc0", "fp16")] == "sparse"
    dense = mlp_chain("d", [64, 40, 64], sequence=16, backend="h200-cusparselt", precision="fp16")
    assert treatment(dense)[("fc0", "fp16")] == "dense:shape_not_aligned"  # asked as if made 2:4
    assert treatment_change(good, good) is None


def test_reduce_keeps_a_shape_the_backend_treats_as_the_original(tmp_path: Path) -> None:
    """The issue's case in small: an fp32 layer of [64, 688] must not shrink to [32, 344], which fails alignment in fp16."""
    good = _cusparselt([64, 688, 64])
    bad = _fp32(good, "fc1")
    save_workload(good, tmp_path / "good.yaml")
    save_workload(bad, tmp_path / "bad.yaml")
    out = tmp_path / "repro.yaml"
    result = invoke(["reduce", str(tmp_path / "good.yaml"), str(tmp_path / "bad.yaml"), "-o", str(out), "--json"])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["confirmed"] is True and payload["target_finding"] == "fallback:dtype_unsupported"
    repro = load_workload(out)
    fc1 = repro.layer("fc1")
    assert fc1.dtype == "fp32" and fc1.shape is not None and all(d % 16 == 0 for d in fc1.shape), fc1.shape
    # The fix the reproducer stands for works on it: in fp16 the layer converts.
    fixed = revalidate(repro.model_copy(update={"layers": [l.model_copy(update={"dtype": None}) for l in repro.layers]}))
    _, lower = plan(fixed)
    assert {layer.name: layer.path.value for layer in lower.layers}["fc1"] == "sparse"
    assert "stop shrinking: widths / 2 change how the backend treats a shape" in result.stderr


def test_a_reproducer_that_does_not_confirm_falls_back_to_the_full_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = _cusparselt([64, 128, 64])
    save_workload(good, tmp_path / "good.yaml")
    save_workload(_fp32(good, "fc1"), tmp_path / "bad.yaml")

    def shrunk_to_nothing(prober: object, base: Workload, repro: Workload, stage: str, kind: str | None) -> tuple[Workload, Workload]:
        return base, base  # a "reproducer" that no longer diverges
    monkeypatch.setattr(reduce_module, "_shrink_graph", shrunk_to_nothing)
    out = tmp_path / "repro.yaml"
    result = invoke(["reduce", str(tmp_path / "good.yaml"), str(tmp_path / "bad.yaml"), "-o", str(out), "--json"])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["confirmed"] is True and payload["full_graph"] is True
    assert load_workload(out).layer("fc1").dtype == "fp32"


def test_nothing_is_written_when_no_reproducer_confirms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = _cusparselt([64, 128, 64])
    save_workload(good, tmp_path / "good.yaml")
    save_workload(_fp32(good, "fc1"), tmp_path / "bad.yaml")
    real_confirm = reduce_module._confirm

    def disagreeing(*args: object) -> tuple[int, object, bool]:
        _, result, _ = real_confirm(*args)  # type: ignore[arg-type]
        return 0, result, False  # as if the timed bisect had shown another finding

    monkeypatch.setattr(reduce_module, "_confirm", disagreeing)
    out = tmp_path / "repro.yaml"
    result = invoke(["reduce", str(tmp_path / "good.yaml"), str(tmp_path / "bad.yaml"), "-o", str(out), "--json"])
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["confirmed"] is False and payload["repro_file"] is None and payload["command"] is None
    assert not out.exists() and not out.with_name("repro.base.yaml").exists()
