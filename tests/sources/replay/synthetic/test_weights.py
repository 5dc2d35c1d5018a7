"""Weights: seeded per layer, loaded from .npz/.safetensors with checks naming the layer, pruned to pattern."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from safetensors.numpy import save_file

from sparsedebug.core.errors import UserError
from sparsedebug.kernels.masks import check_compliance
from sparsedebug.sources.replay.synthetic.weights import build_inputs, build_weights, is_compliant, prune
from sparsedebug.sources.workload.schema import Workload
from tests.support.builders import mlp_chain


def _chain(**fields: Any) -> Workload:
    return mlp_chain("w", [16, 32, 8], sequence=6, sparsity="2:4", **fields)


def test_seeded_weights_are_deterministic_and_per_layer() -> None:
    a = build_weights(_chain(seed=3)).tensors
    b = build_weights(_chain(seed=3)).tensors
    c = build_weights(_chain(seed=4)).tensors
    assert all(np.array_equal(a[name], b[name]) for name in a)
    assert not np.array_equal(a["fc0"], c["fc0"])
    # Changing one layer's shape leaves the other layer's weights untouched (delta debugging relies on it).
    wider = mlp_chain("w", [16, 32, 12], sequence=6, sparsity="2:4", seed=3)
    assert np.array_equal(build_weights(wider).tensors["fc0"], a["fc0"])
    assert a["fc0"].shape == (32, 16)
    assert abs(float(a["fc0"].std()) - 0.25) < 0.05  # N(0, 1/in) with in = 16


@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_loaded_weights_replace_seeded_ones(tmp_path: Path, suffix: str) -> None:
    rng = np.random.default_rng(0)
    tensors: dict[str, npt.NDArray[Any]] = {
        "fc0.weight": rng.standard_normal((32, 16)).astype(np.float32),
        "fc1": rng.standard_normal((8, 32)),
    }
    path = tmp_path / f"w{suffix}"
    if suffix == ".npz":
        np.savez(path, **tensors)  # type: ignore[arg-type]
    else:
        save_file(tensors, str(path))
    workload = _chain(weights={"path": path.name})
    weights = build_weights(workload, tmp_path)
    assert weights.loaded == ["fc0", "fc1"]
    assert np.array_equal(weights.tensors["fc0"], tensors["fc0.weight"].astype(np.float64))
    assert weights.source is not None and weights.source.size_bytes == path.stat().st_size


def test_weights_file_errors_name_the_layer(tmp_path: Path) -> None:
    path = tmp_path / "w.npz"
    np.savez(path, fc0=np.zeros((32, 15)), fc1=np.zeros((8, 32)))
    with pytest.raises(UserError, match=r"layer 'fc0' \(tensor 'fc0'\): shape \[32, 15\] does not match the declared \[32, 16\]"):
        build_weights(_chain(weights={"path": str(path)}))
    bad = np.ones((32, 16))
    bad[3, 4] = np.nan
    np.savez(path, fc0=bad, fc1=np.zeros((8, 32)))
    with pytest.raises(UserError, match="layer 'fc0'.*1 NaN or inf"):
        build_weights(_chain(weights={"path": str(path)}))
    np.savez(path, fc0=np.ones((32, 16)))
    with pytest.raises(UserError, match="layer 'fc1': no tensor 'fc1'"):
        build_weights(_chain(weights={"path": str(path)}))
    partial = build_weights(_chain(weights={"path": str(path), "strict": False}))
    assert partial.loaded == ["fc0"]
    with pytest.raises(UserError, match="tensor 'missing' is not in the file"):
        build_weights(_chain(weights={"path": str(path), "tensors": {"fc1": "missing"}}))
    with pytest.raises(UserError, match="not a layer"):
        build_weights(_chain(weights={"path": str(path), "strict": False, "tensors": {"fc9": "fc0"}}))
    np.savez(path, fc0=np.ones((32, 16), dtype=np.int32), fc1=np.zeros((8, 32)))
    with pytest.raises(UserError, match="layer 'fc0'.*not floating point"):
        build_weights(_chain(weights={"path": str(path)}))
    with pytest.raises(UserError, match="file not found"):
        build_weights(_chain(weights={"path": str(tmp_path / "none.npz")}))
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not safetensors")
    with pytest.raises(UserError, match="cannot read safetensors"):
        build_weights(_chain(weights={"path": str(junk)}))


def test_magnitude_pruning_complies_and_keeps_largest() -> None:
    workload = mlp_chain("w", [16, 64, 16], sequence=4, sparsity="4:2:4")
    tensors = build_weights(workload).tensors
    pruned = prune(workload, tensors)
    for name in ("fc0", "fc1"):
        assert check_compliance(pruned[name], 2, 4, block=4).compliant
        assert is_compliant(workload.layer(name), pruned[name]) is True
        assert np.count_nonzero(pruned[name]) == tensors[name].size // 2
    row = pruned["fc0"][0].reshape(-1, 4)
    original = tensors["fc0"][0].reshape(-1, 4)
    # per-row 2:4 would keep each group's top 2; the block choice keeps the top 2 of the summed block magnitude
    assert np.all((row != 0).sum(axis=1) == 2)
    assert np.array_equal(row[row != 0], original[row != 0])


def test_wanda_uses_input_norms_and_none_keeps_weights() -> None:
    workload = mlp_chain("w", [8, 8], sequence=4, sparsity="2:4", pruning={"method": "wanda"})
    tensors = build_weights(workload).tensors
    norms = np.array([100.0, 100.0, 0.0, 0.0] * 2)
    pruned = prune(workload, tensors, {"fc0": norms})["fc0"]
    # inputs 2 and 3 of every group are silent: wanda keeps positions 0 and 1 regardless of |w|
    assert np.all(pruned.reshape(8, 2, 4)[:, :, 2:] == 0)
    with pytest.raises(UserError, match="wanda pruning needs"):
        prune(workload, tensors, None)
    kept = mlp_chain("w", [8, 8], sequence=4, sparsity="2:4", pruning={"method": "none"})
    same = prune(kept, tensors)
    assert np.array_equal(same["fc0"], tensors["fc0"])
    assert is_compliant(kept.layer("fc0"), same["fc0"]) is False


def test_inputs_seeded_or_from_calibration(tmp_path: Path) -> None:
    workload = _chain(seed=1)
    x = build_inputs(workload).x
    assert x.shape == (16, 6)
    assert np.array_equal(x, build_inputs(workload).x)
    data = tmp_path / "calib.npz"
    rows = np.arange(6 * 16, dtype=np.float32).reshape(6, 16)
    np.savez(data, inputs=rows, labels=np.array([0, 1, 2, 3, 4, 5]))
    calibrated = build_inputs(_chain(calibration={"path": str(data), "labels": "labels"}), out_width=8)
    assert np.array_equal(calibrated.x, rows.T.astype(np.float64))
    assert calibrated.labels is not None and calibrated.labels.tolist() == [0, 1, 2, 3, 4, 5]
    with pytest.raises(UserError, match=r"labels must lie in \[0, 4\)"):
        build_inputs(_chain(calibration={"path": str(data), "labels": "labels"}), out_width=4)
    np.savez(data, inputs=rows[:, :15])
    with pytest.raises(UserError, match=r"expected \(6, 16\) floats"):
        build_inputs(_chain(calibration={"path": str(data)}))
