"""Model workloads over the tiny checkpoints of ``tests.sources.models.tiny``, written where a test wants them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.sources.models.tiny import corpus_text, write_bert_folder, write_llama_gguf


def tiny_models(root: Path) -> dict[str, Path]:
    """A tiny BERT folder, a tiny Llama GGUF and a text file under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    text = root / "text.txt"
    text.write_text(corpus_text(60), encoding="utf-8")
    return {
        "bert": write_bert_folder(root / "bert", seed=4),
        "llama": write_llama_gguf(root / "tiny.gguf", seed=7),
        "text": text,
    }


def model_workload(model: Path, text: Path, **fields: Any) -> dict[str, Any]:
    """A model workload as parsed YAML: 2x16 timed tokens, fp32 on cpu-numpy, 3 repeats; ``fields`` override."""
    data: dict[str, Any] = {
        "schema_version": 1,
        "kind": "workload",
        "name": "tiny",
        "model": {"name": str(model), "text": str(text), "eval_tokens": 256},
        "tokens": {"batch": 2, "sequence": 16},
        "repeats": 3,
        "warmup": 0,
        "backend": "cpu-numpy",
        "precision": "fp32",
        "threads": 1,
        "pruning": {"method": "none"},
    }
    data.update(fields)
    return data


def write_workload(path: Path, data: dict[str, Any]) -> Path:
    """Write parsed workload data as YAML."""
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def candidate_fields(**extra: Any) -> dict[str, Any]:
    """Wanda 2:4 on the FFN linears, calibrated on 128 tokens, with ``extra`` fields."""
    fields: dict[str, Any] = {
        "name": "tiny_2of4",
        "pruning": {"method": "wanda", "pattern": "2:4", "layers": "mlp", "calibration_tokens": 128},
    }
    fields.update(extra)
    return fields


def bert_pair(root: Path) -> dict[str, Path]:
    """The tiny BERT dense (``base``) and its candidate (``cand``: Wanda 2:4, one FFN output layer left in fp32,
    per-call conversion), on the H200 target in fp16, written under ``root`` beside the tiny models."""
    tiny = tiny_models(root)
    target: dict[str, Any] = {"backend": "h200-cusparselt", "precision": "fp16"}
    entry = {"name": "encoder.layer.1.output.dense", "dtype": "fp32", "sparsity": "2:4"}
    base = model_workload(tiny["bert"], tiny["text"], name="tiny_dense", **target)
    cand = model_workload(tiny["bert"], tiny["text"], **candidate_fields(layers=[entry], conversion="per_call", **target))
    return {"base": write_workload(root / "base.yaml", base), "cand": write_workload(root / "cand.yaml", cand), **tiny}
