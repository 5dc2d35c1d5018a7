"""The replay engine: five stages, deterministic numerics, precision-bounded errors, fallbacks, fixtures."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from sparsedebug.core.errors import UserError
from sparsedebug.records.run import STAGES, FallbackReason, KernelPath, RunRecord
from sparsedebug.render.words.notes import say
from sparsedebug.sources.replay.equal_latency import equal_latency_step
from sparsedebug.sources.replay.replay import plan, replay
from sparsedebug.sources.replay.synthetic.executor import attention
from sparsedebug.sources.replay.synthetic.narrow import ffn_groups, narrow
from sparsedebug.sources.replay.synthetic.weights import build_weights
from sparsedebug.sources.workload.load import load_workload
from sparsedebug.sources.workload.schema import CalibrationSpec, Workload
from tests.conftest import FIXTURES
from tests.support.builders import llama_stack, mlp_chain


def _tiny_llama(**fields: object) -> Workload:
    base: dict[str, object] = {"blocks": 1, "hidden": 64, "ffn": 96, "heads": 4, "sequence": 16, "repeats": 3, "warmup": 1}
    base.update(fields)
    return llama_stack("tiny", **base)  # type: ignore[arg-type]


def _numbers(record: RunRecord) -> tuple[object, ...]:
    """Everything a replay must reproduce exactly: decisions, errors, quality (not timings)."""
    return (
        record.graph.model_dump(),
        [(l.name, l.path, l.reason, l.detail, l.value_bytes, l.metadata_bytes) for l in record.lower.layers],
        [(l.name, l.max_abs_err, l.rel_err, l.precision) for l in record.kernel.layers],
        record.outcome.quality,
    )


def test_replay_records_all_five_stages_and_validates() -> None:
    seen: list[str] = []
    record = replay(_tiny_llama(sparsity="2:4"), progress=lambda stage, done, total: seen.append(stage))
    assert [s for i, s in enumerate(seen) if i == 0 or seen[i - 1] != s] == list(STAGES)
    again = RunRecord.model_validate(record.model_dump(mode="json"))
    assert again == record
    assert record.source.kind == "replay"
    assert record.workload is not None and record.workload.knobs["conversion"] == "once"
    assert len(record.graph.layers) == len(record.lower.layers) == len(record.kernel.layers) == 15
    assert len(record.schedule.span_samples_ms) == len(record.schedule.busy_samples_ms) == 3
    idle = record.schedule.layer_idle_samples_ms
    assert list(idle) == [l.name for l in record.graph.layers] and all(len(v) == 3 for v in idle.values())
    assert len(record.outcome.latency_samples_ms) == len(record.outcome.dense_baseline_samples_ms or []) == 3
    linear = [l for l in record.kernel.layers if l.dense_samples_ms is not None]
    assert len(linear) == 7
    assert all(l.path is KernelPath.SPARSE for l in record.lower.layers if "proj" in l.name)
    assert record.schedule.dense_share is not None and 0.0 < record.schedule.dense_share < 1.0
    assert record.outcome.effective_speedup is not None and record.outcome.effective_speedup > 0
    q = record.outcome.quality
    assert q is not None and 0.5 < q.cosine < 0.999 and q.rel_err > 0.01  # 2:4 pruning costs quality
    eq = record.outcome.equal_latency
    assert eq is not None and 0.0 <= eq.narrowed_ffn_fraction < 1.0 and eq.candidate == q


def test_replay_is_deterministic_except_timings() -> None:
    workload = _tiny_llama(sparsity="8:2:4", precision="bf16")
    assert _numbers(replay(workload)) == _numbers(replay(workload))
    other = _tiny_llama(sparsity="8:2:4", precision="bf16", seed=1)
    assert _numbers(replay(other)) != _numbers(replay(workload))


@pytest.mark.parametrize("pattern", ["2:4", "16:2:4"])
def test_layer_errors_follow_the_precision(pattern: str) -> None:
    errors: dict[str, float] = {}
    for precision, unit in (("fp32", 2.0**-24), ("fp16", 2.0**-11), ("bf16", 2.0**-8)):
        record = replay(mlp_chain("m", [64, 128, 64], sparsity=pattern, precision=precision, repeats=3))
        layers = {l.name: l for l in record.kernel.layers}
        for name in ("fc0", "fc1"):
            rel = layers[name].rel_err
            assert rel is not None
            k = 64 if name == "fc0" else 128
            # both operands rounded (2u) plus fp32 accumulation over k terms; generous factor 4
            assert rel <= 4 * (2 * unit + k * 2.0**-24), (precision, name, rel)
        errors[precision] = layers["fc0"].rel_err or 0.0
    assert 0.0 < errors["fp32"] < errors["fp16"] < errors["bf16"]


def test_dense_workload_matches_dense_model() -> None:
    record = replay(_tiny_llama())
    assert all(l.path is KernelPath.DENSE and l.reason is FallbackReason.INTENDED_DENSE for l in record.lower.layers)
    q = record.outcome.quality
    assert q is not None and q.cosine > 1 - 1e-9 and q.rel_err < 1e-5
    assert record.schedule.dense_share == 1.0


def test_per_call_conversion_is_counted() -> None:
    once = replay(_tiny_llama(sparsity="2:4"))
    per_call = replay(_tiny_llama(sparsity="2:4", conversion="per_call"))
    sparse = [l for l in per_call.lower.layers if l.path is KernelPath.SPARSE]
    assert sparse and all(l.conversions_per_call == 1 and (l.conversion_ms or 0) > 0 for l in sparse)
    assert all(l.conversions_per_call == 0 for l in once.lower.layers)
    assert per_call.schedule.launches_per_iteration == (once.schedule.launches_per_iteration or 0) + len(sparse)
    assert per_call.workload is not None and per_call.workload.knobs["conversion"] == "per_call"
    assert _numbers(per_call)[2] == _numbers(once)[2]  # same numerics, only where the conversion happens differs


def test_fallbacks_carry_reasons_on_h200_profile() -> None:
    workload = _tiny_llama(
        sparsity="2:4", backend="h200-cusparselt", precision="fp16", overrides={"layers.0.mlp.down_proj": {"dtype": "fp32"}}
    )
    record = replay(workload)
    lower = {l.name: l for l in record.lower.layers}
    down = lower["layers.0.mlp.down_proj"]
    assert down.path is KernelPath.DENSE and down.reason is FallbackReason.DTYPE_UNSUPPORTED
    assert down.detail is not None and "torch.float32 is not a supported dtype" in say(down.detail)
    assert lower["layers.0.mlp.up_proj"].path is KernelPath.SPARSE
    kernel = {l.name: l for l in record.kernel.layers}
    assert kernel["layers.0.mlp.down_proj"].precision == "fp32"
    assert "fp32_gemm" in record.kernel.by_class_ms and "sparse_gemm" in record.kernel.by_class_ms


def test_noncompliant_given_weights_fall_back() -> None:
    record = replay(mlp_chain("m", [16, 32, 16], sparsity="2:4", pruning={"method": "none"}, repeats=3))
    assert [l.reason for l in record.lower.layers if l.name.startswith("fc")] == [FallbackReason.PATTERN_NOT_COMPLIANT] * 2


def test_accuracy_with_labels_and_threads(tmp_path: Path) -> None:
    workload = mlp_chain("m", [16, 32, 4], sequence=32, sparsity="2:4", threads=1, repeats=3)
    dense = build_weights(workload).tensors
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 16))
    hidden = np.maximum(dense["fc0"] @ x.T, 0)
    labels = np.argmax(dense["fc1"] @ hidden, axis=0)
    np.savez(tmp_path / "c.npz", inputs=x, labels=labels)
    labelled = workload.model_copy(update={"calibration": CalibrationSpec(path="c.npz", labels="labels")})
    source = tmp_path / "w.yaml"
    source.write_text("placeholder for the digest\n")
    seen_threads: set[int] = set()

    def progress(stage: str, done: int, total: int) -> None:
        seen_threads.update(int(lib["num_threads"]) for lib in threadpool_info() if lib["user_api"] == "blas")

    record = replay(labelled, source_path=source, progress=progress)
    assert seen_threads == {1}  # the threads knob really limits BLAS during the replay
    q = record.outcome.quality
    assert q is not None and q.dense_accuracy == 1.0  # labels are the dense model's own predictions
    assert q.accuracy is not None and 0.0 <= q.accuracy <= 1.0
    assert record.schedule.threads == 1
    assert [f.path for f in record.source.files] == [str(source), str(tmp_path / "c.npz")]


def test_attention_matches_a_loop_reference() -> None:
    rng = np.random.default_rng(1)
    heads, kv_heads, batch, seq, hd = 4, 2, 2, 5, 3
    q = rng.standard_normal((heads * hd, batch * seq))
    k = rng.standard_normal((kv_heads * hd, batch * seq))
    v = rng.standard_normal((kv_heads * hd, batch * seq))
    out = attention(q, k, v, heads, kv_heads, batch, seq, causal=True)
    expected = np.zeros_like(q)
    for b in range(batch):
        for h in range(heads):
            g = h // (heads // kv_heads)
            for t in range(seq):
                qi = q[h * hd : (h + 1) * hd, b * seq + t]
                keys = k[g * hd : (g + 1) * hd, b * seq : b * seq + t + 1]
                vals = v[g * hd : (g + 1) * hd, b * seq : b * seq + t + 1]
                s = qi @ keys / math.sqrt(hd)
                w = np.exp(s - s.max())
                expected[h * hd : (h + 1) * hd, b * seq + t] = vals @ (w / w.sum())
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_ffn_groups_and_narrowing() -> None:
    workload = _tiny_llama()
    groups = ffn_groups(workload)
    assert [(g.producers, g.consumer, g.width) for g in groups] == [
        (("layers.0.mlp.gate_proj", "layers.0.mlp.up_proj"), "layers.0.mlp.down_proj", 96)
    ]
    chain = ffn_groups(mlp_chain("m", [8, 16, 8]))
    assert [(g.producers, g.consumer) for g in chain] == [(("fc0",), "fc1")]
    tensors = build_weights(workload).tensors
    half = narrow(workload, tensors, 0.5)
    assert half["layers.0.mlp.up_proj"].shape == (48, 64) and half["layers.0.mlp.down_proj"].shape == (64, 48)
    assert half["layers.0.self_attn.q_proj"] is tensors["layers.0.self_attn.q_proj"]
    assert narrow(workload, tensors, 0.0)["layers.0.mlp.up_proj"] is tensors["layers.0.mlp.up_proj"]
    # the kept neurons are the strongest: their summed score beats any other choice of the same size
    kept_rows = {tuple(r) for r in half["layers.0.mlp.up_proj"]}
    kept = [i for i, r in enumerate(tensors["layers.0.mlp.up_proj"]) if tuple(r) in kept_rows]
    scores = (
        np.linalg.norm(tensors["layers.0.mlp.gate_proj"], axis=1)
        * np.linalg.norm(tensors["layers.0.mlp.up_proj"], axis=1)
        * np.linalg.norm(tensors["layers.0.mlp.down_proj"], axis=0)
    )
    assert sorted(kept) == sorted(np.argsort(-scores)[:48].tolist())


def test_chain_of_linears_narrows_shared_layers_on_both_axes() -> None:
    workload = mlp_chain("chain", [16, 64, 16, 16], sparsity="2:4", repeats=3)
    groups = ffn_groups(workload)
    assert [(g.producers, g.consumer) for g in groups] == [(("fc0",), "fc1"), (("fc1",), "fc2")]
    tensors = build_weights(workload).tensors
    half = narrow(workload, tensors, 0.5)
    assert half["fc0"].shape == (32, 16)
    assert half["fc1"].shape == (8, 32)
    assert half["fc2"].shape == (16, 8)
    record = replay(workload, repeats=3)
    assert record.outcome.equal_latency is not None


def test_replay_refuses_too_few_repeats() -> None:
    with pytest.raises(UserError, match="repeats=2"):
        replay(mlp_chain("m", [8, 8]), repeats=2)


def test_regressed_fixture_lowers_with_its_fallback() -> None:
    path = FIXTURES / "workloads" / "llama_2of4_regressed.yaml"
    _, lower = plan(load_workload(path), path)
    fallbacks = [(l.name, l.reason) for l in lower.layers if l.reason not in (None, FallbackReason.INTENDED_DENSE)]
    assert fallbacks == [("layers.1.mlp.down_proj", FallbackReason.DTYPE_UNSUPPORTED)]
    assert lower.backend == "h200-cusparselt"


@pytest.mark.parametrize(
    "name", ["llama_dense", pytest.param("llama_2of4", marks=pytest.mark.slow), pytest.param("llama_2of4_regressed", marks=pytest.mark.slow)]
)
def test_fixture_workloads_replay_and_validate(name: str) -> None:
    path = FIXTURES / "workloads" / f"{name}.yaml"
    # one BLAS thread: the test checks structure, and a shared CI machine oversubscribed by threads crawls
    workload = load_workload(path).model_copy(update={"threads": 1})
    record = replay(workload, repeats=3, source_path=path)
    assert RunRecord.model_validate(record.model_dump(mode="json")) == record
    sparse = sum(1 for l in record.lower.layers if l.path is KernelPath.SPARSE)
    assert sparse == {"llama_dense": 0, "llama_2of4": 14, "llama_2of4_regressed": 13}[name]
    per_call = {l.conversions_per_call for l in record.lower.layers if l.path is KernelPath.SPARSE}
    assert per_call == ({1} if name == "llama_2of4_regressed" else set() if name == "llama_dense" else {0})
    assert record.workload is not None and record.workload.file is not None


def test_equal_latency_search_finds_the_first_fast_enough_step() -> None:
    calls: list[int] = []

    def ratio(step: int) -> float:
        calls.append(step)
        return 1.6 - step / 10  # at most 1.0 from step 6 on

    assert equal_latency_step(ratio, 16) == (6, True)
    assert len(set(calls)) <= 6  # bisection, not a scan
    assert equal_latency_step(lambda step: 2.0, 16) == (15, False)
    assert equal_latency_step(lambda step: 0.5, 16) == (1, True)


def test_embedding_layernorm_gelu_model_runs_and_matches_numpy() -> None:
    workload = Workload.model_validate(
        {
            "name": "emb",
            "tokens": {"batch": 2, "sequence": 4},
            "repeats": 3,
            "layers": [
                {"name": "embed", "op": "embedding", "shape": [10, 8], "sparsity": "2:4"},
                {"name": "ln", "op": "norm", "fn": "layernorm", "shape": [8]},
                {"name": "fc", "op": "linear", "shape": [16, 8], "sparsity": "2:4"},
                {"name": "act", "op": "activation", "fn": "gelu"},
                {"name": "head", "op": "linear", "shape": [10, 16]},
            ],
        }
    )
    record = replay(workload)
    lower = {l.name: l for l in record.lower.layers}
    assert lower["embed"].reason is FallbackReason.OP_UNSUPPORTED
    assert lower["fc"].path is KernelPath.SPARSE
    kernel = {l.name: l for l in record.kernel.layers}
    # every op is checked against its own fp64 evaluation; fp32 arithmetic stays within a few ulps
    for name in ("ln", "act", "head"):
        assert (kernel[name].rel_err or 0.0) < 1e-5, name
    from sparsedebug.sources.replay.synthetic.weights import build_inputs

    tensors = build_weights(workload).tensors
    ids = build_inputs(workload).x
    h = tensors["embed"][ids].T
    mu = h.mean(axis=0)
    h = (h - mu) / np.sqrt(((h - mu) ** 2).mean(axis=0) + 1e-5) * tensors["ln"][:, None]
    h = tensors["fc"] @ h
    h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h**3)))
    dense_out = tensors["head"] @ h
    from sparsedebug.sources.replay.synthetic.executor import build_ops, forward
    from sparsedebug.sources.workload.graph import check_graph

    out, _ = forward(build_ops(workload, check_graph(workload), tensors, mode="reference"), ids)
    np.testing.assert_allclose(out, dense_out, rtol=1e-12, atol=1e-12)


def test_silu_matches_scipy_sigmoid_without_overflow() -> None:
    from scipy.special import expit

    from sparsedebug.sources.replay.synthetic.executor import _activation

    x = np.linspace(-800.0, 800.0, 4001)
    with np.errstate(all="raise"):
        out = _activation("silu", x)
    # accurate to a few ulps of |x| (tiny outputs for very negative x are not relative-accurate, nor need be)
    assert np.all(np.abs(out - x * expit(x)) <= 4 * np.finfo(np.float64).eps * np.maximum(1.0, np.abs(x)))
