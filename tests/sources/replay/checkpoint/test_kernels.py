"""The checkpoint replay's kernels: one rounding of a shared input, the same products as rounding per call."""

from __future__ import annotations

import numpy as np
import pytest

from sparsedebug.kernels import precision as precision_module
from sparsedebug.kernels.masks import Pattern
from sparsedebug.kernels.precision import round_input
from sparsedebug.sources.replay.checkpoint import kernels as kernels_module
from sparsedebug.sources.replay.checkpoint.kernels import candidate_kernels


@pytest.mark.parametrize("precision", ["fp16", "bf16", "fp32"])
def test_layers_reading_one_input_round_it_once(precision: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    weights = {name: rng.standard_normal((16, 32)).astype(np.float32) for name in ("q", "k", "v", "o")}
    model = candidate_kernels(weights, dict.fromkeys(weights, precision), {"k": Pattern(n=2, m=4)}, per_call=False)
    calls: list[int] = []

    def counting(x: np.ndarray, prec: str) -> np.ndarray:
        calls.append(id(x))
        return precision_module.round_input(x, prec)  # type: ignore[arg-type]

    monkeypatch.setattr(kernels_module, "round_input", counting)
    x = (rng.standard_normal((8, 32)) * 30).astype(np.float32)
    outs = {name: model.run(name, x) for name in ("q", "k", "v")}
    assert len(calls) == (1 if precision != "fp32" else 3)
    for name, out in outs.items():
        layer = model.kernels[name]
        want = layer.compute(x, layer.prepared(), round_input(x, precision))  # type: ignore[arg-type]
        np.testing.assert_array_equal(out, want)
    if precision != "fp32":
        with pytest.raises(ValueError):
            x += 1.0  # an input changed in place after it was rounded would be a stale rounding: refused
    other = x.copy()
    model.run("o", other)
    assert calls[-1] == id(other)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_dense_layers_reading_one_input_share_one_rounding_without_an_extra_copy(precision: str) -> None:
    from sparsedebug.sources.replay.checkpoint.kernels import ForwardTrace

    rng = np.random.default_rng(1)
    weights = {name: rng.standard_normal((width, 24)).astype(np.float32) for name, width in (("q", 16), ("k", 8), ("v", 8))}
    model = candidate_kernels(weights, dict.fromkeys(weights, precision), {}, per_call=False)
    x = rng.standard_normal((5, 24)).astype(np.float32)
    alone = {name: model.kernels[name].compute(x, None) for name in weights}
    model.trace = ForwardTrace()
    model.trace.begin()
    joint = model.run_group(("q", "k", "v"), x)
    model.trace.end()
    assert joint is not None and [y.shape for y in joint] == [(5, 16), (5, 8), (5, 8)]
    for name, y in zip(("q", "k", "v"), joint, strict=True):
        np.testing.assert_allclose(y, alone[name], rtol=1e-5, atol=1e-5)
        assert y.flags.c_contiguous and not np.shares_memory(y, model.kernels[name].rounded_t)
        np.testing.assert_array_equal(model.kernels[name].rounded, round_input(weights[name], precision))  # type: ignore[arg-type]
    assert set(model.trace.layer_host_ms) == {"q", "k", "v"} and model.trace.sparse_ms == [0.0]
    again = model.run_group(("q", "k", "v"), x)
    assert again is not None and all(np.array_equal(a, b) for a, b in zip(again, joint, strict=True))


def test_a_group_with_a_sparse_layer_mixed_precisions_or_fp32_runs_layer_by_layer() -> None:
    rng = np.random.default_rng(2)
    weights = {name: rng.standard_normal((8, 16)).astype(np.float32) for name in ("gate", "up")}
    x = rng.standard_normal((3, 16)).astype(np.float32)
    sparse = candidate_kernels(weights, dict.fromkeys(weights, "fp16"), {"up": Pattern(n=2, m=4)}, per_call=False)
    assert sparse.run_group(("gate", "up"), x) is None
    mixed = candidate_kernels(weights, {"gate": "fp16", "up": "bf16"}, {}, per_call=False)
    assert mixed.run_group(("gate", "up"), x) is None
    fp32 = candidate_kernels(weights, dict.fromkeys(weights, "fp32"), {}, per_call=False)
    assert fp32.run_group(("gate", "up"), x) is None  # fp32 layers keep the weight itself: no joint copy
    assert all(k.rounded_t is None and np.shares_memory(k.rounded, weights[n]) for n, k in fp32.kernels.items())
