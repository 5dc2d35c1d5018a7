"""`sparsedebug quality` through the CLI on tiny checkpoints: table, JSON, --save, --text and bad input."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from sparsedebug.records.quality import QualityStudy
from tests.conftest import assert_clean_error, assert_json_error, invoke
from tests.sources.models.tiny import corpus_text, write_bert_folder, write_llama_gguf
from tests.support.proc import run_cli


@pytest.fixture(scope="module")
def gguf_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_llama_gguf(tmp_path_factory.mktemp("cli") / "tiny.gguf", seed=7)


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bert_folder(tmp_path_factory.mktemp("cli") / "tinybert", seed=8)


@pytest.fixture(scope="module")
def text_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("text") / "prose.txt"
    # 512-token windows of a byte-level BPE: the tiny vocabulary needs a long text.
    path.write_text(corpus_text(400), encoding="utf-8")
    return path


def test_decoder_table_dense_first_then_each_method(gguf_path: Path, text_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "study.json"
    result = invoke(["quality", str(gguf_path), "--text", str(text_file), "-m", "magnitude", "-m", "wanda",
                     "--pattern", "2:4", "--tokens", "512", "--calibration-tokens", "512", "-o", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    flat = " ".join(result.stdout.split())
    assert "quality tiny" in flat and "prose.txt" in flat
    assert "perplexity" in result.stdout and "vs dense" in result.stdout and "max err" in result.stdout
    rows = [line for line in lines if line.startswith("│ ")]
    assert [row.split("│")[1].strip() for row in rows[:3]] == ["dense", "magnitude 2:4 all", "wanda 2:4 all"]
    assert "largest layer output errors" not in result.stdout
    assert "text sha256" in flat and "Python 3." in flat and "1 window (512 tokens)" in flat
    assert "quality: wanda 2:4 all" in result.stderr  # one line per row on a non-terminal
    study = QualityStudy.model_validate_json(out.read_text())
    assert [row.label for row in study.rows] == ["dense", "magnitude 2:4 all", "wanda 2:4 all"]
    assert f"wrote {out}" in result.stdout


def test_encoder_json_and_save(bert_dir: Path, text_file: Path, tmp_path: Path) -> None:
    result = invoke(["quality", str(bert_dir), "--text", str(text_file), "--method", "sparsegpt", "--pattern", "2:4",
                     "--pattern", "4:8", "--layers", "mlp", "--tokens", "300", "--calibration-tokens", "300",
                     "--save", str(tmp_path), "--save-dtype", "fp16", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.stderr
    study = QualityStudy.model_validate(json.loads(result.stdout))
    assert study.metric == "cosine_mean"
    assert [row.label for row in study.rows] == ["dense", "sparsegpt 2:4 mlp", "sparsegpt 4:8 mlp"]
    saved = sorted(p.name for p in tmp_path.iterdir())
    assert saved == ["quality.json", "tinybert-sparsegpt-2of4-mlp.safetensors", "tinybert-sparsegpt-4of8-mlp.safetensors"]
    assert QualityStudy.model_validate_json((tmp_path / "quality.json").read_text()).rows[1].saved is not None
    assert result.stderr == "" or "quality:" not in result.stderr  # --json: no progress lines


def test_encoder_table_columns_and_layer_errors(bert_dir: Path, text_file: Path) -> None:
    result = invoke(["quality", str(bert_dir), "--text", str(text_file), "-m", "magnitude", "--tokens", "200", "--layer-errors"])
    assert result.exit_code == 0, result.stderr
    for needle in ("cos mean", "cos min", "NN agree", "sentences", "largest layer output errors (top 3 per variant)"):
        assert needle in result.stdout, needle
    assert result.stdout.count("encoder.layer.") == 3
    assert "fewer than the 4096 asked" in result.stderr  # the default calibration tokens; the text has fewer


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--method", "obs"], "--method 'obs': expected one of magnitude, wanda, sparsegpt"),
        (["--pattern", "2-4"], "expected 'N:M'"),
        (["--layers", "blk.99.*"], "matches no linear layer"),
        (["--calibration-tokens", "99999"], "above the cap of 16384"),
        (["--text", "/no/such/file.txt"], "file not found"),
        (["--save", "{text}/dir"], "is a file, not a folder"),  # a missing --save folder is created; a file on its path is not
        (["--save", "{text}"], "(--save): is a file, expected a folder"),
        (["--pattern", "100000:2:4"], "block V=100000 of pattern 100000:2:4 is taller than"),
        (["--save", ".", "--save-dtype", "bf16"], "--save-dtype 'bf16': expected one of fp32, fp16"),
        (["--pattern", "3:7"], "not divisible by M=7"),
    ],
)
def test_bad_input_exits_2_with_one_line(gguf_path: Path, text_file: Path, extra: list[str], needle: str) -> None:
    args = ["quality", str(gguf_path), "--tokens", "64", "-m", "magnitude"]
    if "--text" not in extra:
        args += ["--text", str(text_file)]
    result = invoke([*args, *(item.format(text=text_file) for item in extra)])
    assert_clean_error(result, 2, needle)


def test_absurd_token_counts_are_refused_by_their_limit(gguf_path: Path, text_file: Path) -> None:
    result = invoke(["quality", str(gguf_path), "--tokens", str(10**12), "-m", "magnitude", "--text", str(text_file), "--json"])
    error = assert_json_error(result, 2)
    assert str(error["message"]) == "Invalid value for '--tokens': Input should be less than or equal to 16777216, got '1000000000000'"
    assert result.stderr.count("\n") == 1 and "Usage:" not in result.stderr  # one line, not typer's boxed usage


def test_save_creates_its_folder_and_files_follow_the_umask(gguf_path: Path, text_file: Path, tmp_path: Path) -> None:
    target = tmp_path / "new" / "deeper"
    args = ["quality", str(gguf_path), "--tokens", "64", "-m", "magnitude", "--text", str(text_file), "--save", str(target)]
    result = run_cli(args, umask=0o022)
    assert result.returncode == 0, result.stderr
    saved = target / "tiny-magnitude-2of4-all.safetensors"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o644  # not the 0600 of its temporary file
    assert stat.S_IMODE(target.stat().st_mode) == 0o755 and (target / "quality.json").is_file()


def test_unknown_model_exits_2() -> None:
    result = invoke(["quality", "gpt-17"])
    assert_clean_error(result, 2, "not a known model (minilm-l6, smollm2-135m)")


def test_help_documents_defaults() -> None:
    result = invoke(["quality", "--help"])
    assert result.exit_code == 0
    flat = " ".join(result.stdout.split())
    for needle in ("pydoc_data.topics", "--calibration-tokens", "cap 16384", "--save", "magnitude, wanda, sparsegpt"):
        assert needle in flat, needle
