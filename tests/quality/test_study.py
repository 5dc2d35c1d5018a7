"""The quality study on tiny checkpoints: rows, metrics, sequential calibration, saving, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.kernels.masks import Pattern, check_compliance
from sparsedebug.kernels.pruning import InputStats, wanda_prune
from sparsedebug.quality.save import save_pruned
from sparsedebug.quality.study import StudyRequest, run_study
from sparsedebug.records.quality import QualityStudy
from sparsedebug.sources.models.base import Array, Batch
from sparsedebug.sources.models.data import prepare_data
from sparsedebug.sources.models.load import LoadedModel, load_model
from sparsedebug.sources.models.metrics import (
    LayerErrorMeter,
    embedding_agreement,
    nearest_neighbours,
    perplexity,
)
from sparsedebug.sources.models.prune import prune_model
from sparsedebug.sources.models.text import Corpus
from tests.sources.models.tiny import corpus_text, write_bert_folder, write_llama_gguf


def QUIET(_):
    return None


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    path = write_llama_gguf(tmp_path_factory.mktemp("q") / "tiny.gguf", seed=5, hidden=32, ffn=64)
    loaded = load_model(str(path), QUIET)
    # Tiny windows so that the tiny text holds many of them.
    return LoadedModel(**{**loaded.__dict__, "defaults": loaded.defaults.model_copy(update={"window": 64, "calibration_cap": 4096})})


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    return load_model(str(write_bert_folder(tmp_path_factory.mktemp("b") / "tiny", seed=6)), QUIET)


CORPUS = Corpus("tiny-text", corpus_text(60))


def test_decoder_study_rows_dense_first_then_every_variant(llama: LoadedModel) -> None:
    request = StudyRequest(methods=["magnitude", "wanda", "sparsegpt"], patterns=[Pattern(n=2, m=4), Pattern(n=1, m=4)],
                           selections=("all", "blk.*.ffn_down"), eval_tokens=256, calibration_tokens=256)  # fmt: skip
    seen: list[tuple[str, int, int]] = []
    study = run_study(llama, CORPUS, request, lambda label, done, total: seen.append((label, done, total)))
    QualityStudy.model_validate_json(study.model_dump_json())
    assert [row.label for row in study.rows][:4] == ["dense", "magnitude 2:4 all", "wanda 2:4 all", "sparsegpt 2:4 all"]
    assert len(study.rows) == 1 + 3 * 2 * 2
    assert study.metric == "perplexity" and study.model.kind == "decoder"
    assert study.text.sha256 == CORPUS.sha256 and study.text.python_version
    assert study.split.evaluation_units == 4 and study.split.evaluation_tokens == 256 and study.split.window_tokens == 64
    dense = study.rows[0]
    assert dense.pruning is None and dense.delta.perplexity == 0.0
    for row in study.rows[1:]:
        assert row.pruning is not None
        assert row.metrics.perplexity is not None and np.isfinite(row.metrics.perplexity)
        assert row.delta.perplexity == pytest.approx(row.metrics.perplexity - dense.metrics.perplexity)
        assert row.metrics.perplexity != dense.metrics.perplexity
        expected = 14 if row.pruning.layers == "all" else 2
        assert row.pruned_layers == expected == len(row.layer_errors)
        assert all(0 < err.relative_error < 2 for err in row.layer_errors)
        assert row.seconds >= row.calibration_seconds >= 0
        calibrated = row.pruning.method != "magnitude"
        assert row.pruning.calibration_tokens == (256 if calibrated else 0)
        assert (row.pruning.damping is not None) == (row.pruning.method == "sparsegpt")
    by_label = {row.label: row for row in study.rows}
    assert by_label["magnitude 2:4 all"].sparsity == pytest.approx(0.5)
    assert by_label["magnitude 1:4 all"].sparsity == pytest.approx(0.75)
    assert 0 < by_label["magnitude 2:4 blk.*.ffn_down"].sparsity < 0.5
    assert {label for label, _, _ in seen} == set(by_label)
    assert all(done <= total for _, done, total in seen)


def test_encoder_study_scores_agreement_with_dense(bert: LoadedModel) -> None:
    request = StudyRequest(methods=["magnitude", "sparsegpt"], patterns=[Pattern(n=2, m=4)], eval_tokens=400, calibration_tokens=300)
    study = run_study(bert, CORPUS, request)
    assert study.metric == "cosine_mean" and study.split.unit == "sentence"
    dense, *variants = study.rows
    assert (dense.metrics.cosine_mean, dense.metrics.cosine_min, dense.metrics.neighbour_agreement) == (1.0, 1.0, 1.0)
    assert study.split.evaluation_tokens >= 400 and study.split.calibration_tokens >= 300
    for row in variants:
        m = row.metrics
        assert m.cosine_min is not None and m.cosine_mean is not None and m.neighbour_agreement is not None
        assert -1 <= m.cosine_min <= m.cosine_mean < 1 and 0 <= m.neighbour_agreement <= 1
        assert row.delta.cosine_mean == pytest.approx(m.cosine_mean - 1.0)
        assert len(row.layer_errors) == 12


def test_sequential_calibration_feeds_each_block_the_pruned_blocks_before_it(llama: LoadedModel) -> None:
    model = llama.model
    data = prepare_data(llama, CORPUS, 128, 128)
    layers = list(model.linears.values())
    pattern = Pattern(n=2, m=4)
    pruned = prune_model(model, layers, pattern, "wanda", data.calibration)
    # Block 0 sees the embeddings; block 1 sees block 0's output with block 0 pruned.
    h0 = model.embed(data.calibration)
    h1 = model.block(0, h0, data.calibration, pruned, None)
    for block, h in ((0, h0), (1, h1)):
        stats: dict[str, InputStats] = {}

        def hook(name: str, x: Array, y: Array, stats: dict[str, InputStats] = stats) -> None:
            stats.setdefault(name, InputStats(x.shape[1], gram=False)).add(x)

        earlier = {k: v for k, v in pruned.items() if not k.startswith(f"blk.{block}.")}
        model.block(block, h, data.calibration, earlier, hook)
        for layer in model.block_linears(block):
            want = wanda_prune(model.weight(layer.name), pattern, stats[layer.group].feature_norms())
            np.testing.assert_array_equal(pruned[layer.name], want, err_msg=layer.name)
    for name, weight in pruned.items():
        assert check_compliance(weight, 2, 4).compliant, name


def test_study_data_is_disjoint_and_capped(llama: LoadedModel) -> None:
    data = prepare_data(llama, CORPUS, 200, 100)
    assert data.split.evaluation_units == 4 and data.split.calibration_units == 2  # whole windows, rounded up
    eval_windows = {tuple(data.evaluation.ids[a:b]) for a, b in data.evaluation.spans()}
    cal_windows = {tuple(data.calibration.ids[a:b]) for a, b in data.calibration.spans()}
    assert eval_windows.isdisjoint(cal_windows)
    with pytest.raises(UserError, match="above the cap of 4096"):
        prepare_data(llama, CORPUS, 200, 5000)
    with pytest.raises(UserError, match="fewer than two windows of 64"):
        prepare_data(llama, Corpus("short", "Too short a text."), 200, 100)


def test_encoder_needs_enough_sentences(bert: LoadedModel) -> None:
    with pytest.raises(UserError, match="need at least 3 and 1"):
        prepare_data(bert, Corpus("few", "The cat sat on the mat today. The dog ran in the park."), 100, 100)


def test_selection_and_pattern_errors_come_before_any_work(llama: LoadedModel) -> None:
    with pytest.raises(UserError, match="matches no linear layer"):
        run_study(llama, CORPUS, StudyRequest(methods=["magnitude"], patterns=[Pattern(n=2, m=4)], selections=("nothing.*",)))
    with pytest.raises(UserError, match="not divisible by M=5"):
        run_study(llama, CORPUS, StudyRequest(methods=["magnitude"], patterns=[Pattern(n=2, m=5)]))


def test_save_writes_exact_zeros_and_the_pruning_block(llama: LoadedModel, tmp_path: Path) -> None:
    from safetensors import safe_open

    request = StudyRequest(methods=["magnitude"], patterns=[Pattern(n=2, m=4)], eval_tokens=64, calibration_tokens=64,
                           save_dir=tmp_path, save_dtype="fp16")  # fmt: skip
    study = run_study(llama, CORPUS, request)
    row = study.rows[1]
    assert row.saved is not None and Path(row.saved).name == "tiny-magnitude-2of4-all.safetensors"
    with safe_open(row.saved, framework="numpy") as handle:
        metadata = handle.metadata()
        weight = handle.get_tensor("blk.1.ffn_down.weight")
        assert handle.get_tensor("token_embd.weight").dtype == np.float16
    assert weight.dtype == np.float16 and check_compliance(weight.astype(np.float32), 2, 4).compliant
    assert np.count_nonzero(weight) == weight.size // 2
    assert json.loads(metadata["sparsedebug.pruning"])["method"] == "magnitude"
    assert [p.name for p in tmp_path.iterdir()] == ["tiny-magnitude-2of4-all.safetensors"]
    with pytest.raises(UserError, match="--save-dtype"):
        save_pruned(tmp_path, llama, row, {}, "int8")
    # a missing folder is created (parents too); a file in its place is refused
    assert save_pruned(tmp_path / "new" / "dir", llama, row, {}, "fp32").parent == tmp_path / "new" / "dir"
    with pytest.raises(UserError, match="is a file, expected a folder"):
        save_pruned(tmp_path / "tiny-magnitude-2of4-all.safetensors", llama, row, {}, "fp32")


def test_metrics() -> None:
    assert perplexity(np.full(10, np.log(7.0))) == pytest.approx(7.0)
    with pytest.raises(UserError):
        perplexity(np.zeros(0))
    e = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [-1.0, 0.2]])
    assert nearest_neighbours(e).tolist() == [1, 0, 3, 2]
    same = embedding_agreement(e, e)
    assert (same.cosine_mean, same.cosine_min, same.neighbour_agreement) == pytest.approx((1.0, 1.0, 1.0))
    flipped = e.copy()
    flipped[3] = [0.0, -1.0]
    other = embedding_agreement(e, flipped)
    assert other.cosine_min < 0 and other.neighbour_agreement == pytest.approx(0.5)
    with pytest.raises(UserError):
        embedding_agreement(e[:2], e[:2])


def test_layer_error_meter_matches_direct_computation() -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((5, 8)).astype(np.float32)
    bias = rng.standard_normal(5).astype(np.float32)
    pruned = np.where(np.abs(w) > 0.5, w, 0).astype(np.float32)
    meter = LayerErrorMeter({"l": pruned - w})
    xs = [rng.standard_normal((n, 8)).astype(np.float32) for n in (3, 4)]
    for x in xs:
        meter("l", x, x @ pruned.T + bias)
        meter("other", x, x)  # not pruned: ignored
    x = np.vstack(xs).astype(np.float64)
    want = np.linalg.norm(x @ (pruned - w).T) / np.linalg.norm(x @ w.T + bias)
    assert meter.relative_errors() == {"l": pytest.approx(want, rel=1e-5)}


def test_batch_split_keeps_whole_sequences() -> None:
    batch = Batch.of([[1, 2, 3], [4, 5], [6], [7, 8, 9, 10]])
    parts = batch.split(4)
    assert [p.lengths for p in parts] == [(3,), (2, 1), (4,)]
    assert np.concatenate([p.ids for p in parts]).tolist() == list(range(1, 11))
    assert batch.positions.tolist() == [0, 1, 2, 0, 1, 0, 0, 1, 2, 3]
