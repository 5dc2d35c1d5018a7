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
