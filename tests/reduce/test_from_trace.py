"""Step 4 on a trace pair: the blamed layer as reproducer.yaml, its dense twin and repro.py, checked against a fake torch."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sparsedebug.playbook.run import run_playbook
from sparsedebug.reduce.from_trace import trace_repro
from sparsedebug.render.repro import render_repro_script
from sparsedebug.render.words.notes import say_all
from sparsedebug.sources.bundle import load_bundle
from sparsedebug.sources.detect import load_workload
from tests.conftest import FIXTURES, invoke
from tests.support.fake_torch import make_fake_torch

H200 = FIXTURES / "h200"
TRACES = FIXTURES / "traces"


@pytest.fixture(scope="module")
def h200_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("walk") / "bundle"
    run_playbook(out, baseline=H200 / "trace_dense_T2048.json.gz", candidate=H200 / "trace_sparse_mlp_T2048.json.gz")
    return out


def _run_script(path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[list, str]:
    """Compile repro.py, then run its main() against the recording stand-in for torch."""
    source = path.read_text()
    code = compile(source, str(path), "exec")
    _torch, modules, calls = make_fake_torch()
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    namespace: dict = {"__name__": "repro"}
    exec(code, namespace)  # noqa: S102 - the generated script, against the fake torch
    assert namespace["main"](["--repeats", "5", "--warmup", "1"]) == 0
    return calls, capsys.readouterr().out


def test_walk_on_the_h200_pair_writes_the_reproducer_of_the_blamed_layer(h200_bundle: Path) -> None:
    bundle = load_bundle(h200_bundle)
    tr = bundle.trace_repro
    assert tr is not None
    assert (tr.layer, tr.group, tr.first_stage, tr.finding, tr.mechanism) == (
        "layers.0.mlp.gate_proj", "layers.{i}.mlp.gate_proj", "schedule", "idle_grew", "scheduling",
    )
    assert tr.candidate.backend == "cusparselt" and tr.baseline is not None and tr.baseline.path == "dense"
    assert {f: (h200_bundle / n).is_file() for f, n in tr.files.items()} == {"script": True, "workload": True, "dense_twin": True}
    cand = load_workload(h200_bundle / "reproducer.yaml")
    base = load_workload(h200_bundle / "reproducer.base.yaml")
    (layer,) = cand.layers
    assert (layer.shape, layer.sparsity, cand.precision, cand.tokens.total, cand.backend, cand.launch) == (
        [11008, 4096], "2:4", "fp16", 2048, "h200-cusparselt", "eager",
    )
    assert base.layers[0].sparsity == "dense" and base.layers[0].shape == layer.shape
    assert cand.origin is not None and not cand.origin.replay_shows
    assert "cannot show that stage" in cand.origin.note
    memo = (h200_bundle / "report.md").read_text()
    assert "Focused reproducer from the traces (`repro.py`, `reproducer.yaml`, `reproducer.base.yaml`)" in memo
    assert "stack PyTorch semi-structured sparsity" in memo and "verdicts from stack profile `pytorch`" in memo
    assert "CUDA runtime 13.0" in memo and "compute capability 9.0" in memo


def test_repro_script_asks_for_the_traced_shapes_dtypes_strides_and_backend(
    h200_bundle: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls, out = _run_script(h200_bundle / "repro.py", monkeypatch, capsys)
    allocs = [c[1] for c in calls if c[0] == "empty_strided"]
    assert allocs[:2] == [
        {"shape": (2048, 4096), "stride": (4096, 1), "device": "cuda", "dtype": "float16"},
        {"shape": (11008, 4096), "stride": (4096, 1), "device": "cuda", "dtype": "float16"},
    ]
    (convert,) = [c[1] for c in calls if c[0] == "to_sparse_semi_structured"]
    assert convert["backend"] == "cusparselt" and convert["weight"].shape == (11008, 4096)
    linears = [c[1] for c in calls if c[0] == "linear"]
    assert {lin["weight"].kind for lin in linears} == {"cusparselt", "dense"}
    assert sum(1 for c in calls if c[0] == "cuda.Event") >= 2 * 2 * 5
    assert "candidate: backend cusparselt (trace: cusparselt)" in out
    assert "dense twin: backend cublas (trace: cublas)" in out
    assert "ratio candidate/twin p50: 1.000x" in out


def test_attention_reproducer_rebuilds_the_non_contiguous_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "bundle"
    run_playbook(out_dir, baseline=H200 / "trace_dense_T2048.json.gz", candidate=TRACES / "h200_dense_sdpa_efficient_noncontig.json.gz")
    tr = load_bundle(out_dir).trace_repro
    assert tr is not None and tr.op_kind == "attention" and tr.candidate.backend == "efficient" and not tr.replay_shows
    calls, out = _run_script(out_dir / "repro.py", monkeypatch, capsys)
    (sdpa_cand, sdpa_twin) = [c[1] for c in calls if c[0] == "sdpa"][:2]
    assert sdpa_cand["q"].stride_ == (8388608, 262144, 1, 2048) and sdpa_cand["is_causal"] is True
    assert sdpa_twin["q"].stride_ == (4096, 128, 4096, 1)
    assert "candidate: backend efficient (trace: efficient)" in out
    assert "dense twin: backend flash (trace: cudnn)" in out  # the fake dispatches contiguous to flash: named as a mismatch


def test_no_regression_no_reproducer(h200_bundle: Path) -> None:
    bundle = load_bundle(h200_bundle)
    assert bundle.bisect is not None
    same = bundle.bisect.model_copy(update={"first_stage": None})
    assert trace_repro(bundle.baseline, bundle.candidate, same, bundle.classification) is None


def test_replay_of_a_trace_reproducer_says_why_it_cannot_show_the_trace(h200_bundle: Path, tmp_path: Path) -> None:
    # the traced shape takes minutes on a CPU: the same reproducer, narrowed, carries the same origin note
    cand = load_workload(h200_bundle / "reproducer.yaml")
    small = cand.model_copy(update={"tokens": cand.tokens.model_copy(update={"sequence": 64}), "input_features": 256,
                                    "layers": [cand.layers[0].model_copy(update={"shape": [256, 256]})], "repeats": 3})
    from sparsedebug.sources.workload.schema import save_workload

    save_workload(small, tmp_path / "small.yaml")
    result = invoke(["replay", str(tmp_path / "small.yaml")])
    assert result.exit_code == 0, result.stdout + result.stderr
    text = " ".join(result.stdout.split())
    assert "reproducer of layers.0.mlp.gate_proj from trace trace_sparse_mlp_T2048.json.gz" in text
    assert "diverged first at schedule, mechanism scheduling" in text
    assert "this replay cannot show it" in text


def test_script_compiles_for_every_variant(h200_bundle: Path) -> None:
    bundle = load_bundle(h200_bundle)
    tr = bundle.trace_repro
    assert tr is not None
    cutlass = tr.model_copy(update={"candidate": tr.candidate.model_copy(update={"backend": "cutlass_sparse"}), "baseline": None})
    text = render_repro_script(cutlass, "t.json")
    compile(text, "repro.py", "exec")
    assert "_FORCE_CUTLASS = True" in text
    assert json.loads(json.dumps(tr.model_dump(mode="json")))["kind"] == "trace_repro"


def test_unannotated_traces_still_give_the_reproducer(tmp_path: Path) -> None:
    out_dir = tmp_path / "bundle"
    run_playbook(out_dir, baseline=TRACES / "h200_dense_unannotated.json.gz", candidate=TRACES / "h200_sparse_mlp_unannotated.json.gz")
    tr = load_bundle(out_dir).trace_repro
    assert tr is not None and tr.first_stage == "schedule" and tr.candidate.backend == "cusparselt"
    assert tr.baseline is not None and tr.baseline.path == "dense"
    assert load_workload(out_dir / "reproducer.yaml").layers[0].shape == [11008, 4096]


def test_a_pair_that_does_not_diverge_writes_no_reproducer(tmp_path: Path) -> None:
    out_dir = tmp_path / "bundle"
    bundle = run_playbook(
        out_dir, baseline=H200 / "trace_dense_T2048_cudagraph.json.gz", candidate=H200 / "trace_sparse_mlp_T2048_cudagraph.json.gz"
    )
    assert bundle.trace_repro is None and not (out_dir / "repro.py").exists()
    step = next(s for s in bundle.manifest.steps if s.step == "reproduce")
    assert "no trace reproducer: the traces do not diverge" in say_all(step.detail)


def test_script_rebuilds_a_bias_and_an_attention_mask_when_the_trace_passed_them(
    h200_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sparsedebug.records.reduce import TraceOperand

    tr = load_bundle(h200_bundle).trace_repro
    assert tr is not None
    bias = TraceOperand(role="bias", shape=[11008], stride=[1], dtype="fp16")
    with_bias = tr.model_copy(update={"candidate": tr.candidate.model_copy(update={"operands": [*tr.candidate.operands, bias]})})
    (tmp_path / "linear.py").write_text(render_repro_script(with_bias, "t.json"))
    calls, _ = _run_script(tmp_path / "linear.py", monkeypatch, capsys)
    sparse_call = next(c[1] for c in calls if c[0] == "linear" and c[1]["weight"].kind == "cusparselt")
    assert sparse_call["bias"] is not None and sparse_call["bias"].shape == (11008,)
    twin_call = next(c[1] for c in calls if c[0] == "linear" and c[1]["weight"].kind == "dense")
    assert twin_call["bias"] is None

    out_dir = tmp_path / "attn"
    run_playbook(out_dir, baseline=H200 / "trace_dense_T2048.json.gz", candidate=TRACES / "h200_dense_sdpa_efficient_noncontig.json.gz")
    attn = load_bundle(out_dir).trace_repro
    assert attn is not None
    mask = TraceOperand(role="attn_mask", shape=[1, 1, 2048, 2048], stride=[4194304, 4194304, 2048, 1], dtype="bool")
    masked = attn.model_copy(update={"candidate": attn.candidate.model_copy(update={"operands": [*attn.candidate.operands, mask], "is_causal": False})})
    (tmp_path / "attn.py").write_text(render_repro_script(masked, "t.json"))
    calls, out = _run_script(tmp_path / "attn.py", monkeypatch, capsys)
    sdpa_cand = next(c[1] for c in calls if c[0] == "sdpa")
    assert sdpa_cand["attn_mask"].shape == (1, 1, 2048, 2048) and sdpa_cand["attn_mask"].dtype.name == "bool"
    assert sdpa_cand["is_causal"] is False
    assert {"shape": (1, 1, 2048, 2048), "stride": (4194304, 4194304, 2048, 1), "device": "cuda", "dtype": "bool"} in [
        c[1] for c in calls if c[0] == "empty_strided"
    ]


@pytest.mark.parametrize("targets_ms", [None, 3.25])
def test_script_names_the_set_it_stands_for_with_or_without_a_timed_saving(
    h200_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], targets_ms: float | None
) -> None:
    """A fallback fix found on one run names its set with no saving timed for it (targets_ms None): the script says so."""
    tr = load_bundle(h200_bundle).trace_repro
    assert tr is not None
    wide = tr.model_copy(update={"targets": ["layers.0.mlp.up_proj", "layers.1.mlp.up_proj"], "targets_ms": targets_ms})
    (tmp_path / "wide.py").write_text(render_repro_script(wide, "t.json"))
    _, out = _run_script(tmp_path / "wide.py", monkeypatch, capsys)
    assert "stands for 2 layers sharing the cause (layers.0.mlp.up_proj, layers.1.mlp.up_proj)" in out
    assert ("the fix removes 3.250 ms per iteration across them" in out) is (targets_ms is not None)
