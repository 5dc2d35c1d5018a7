"""The memo's build and runtime tags in words: each run's from its own artifact, then the analysing machine's."""

from __future__ import annotations

from sparsedebug.records.memo import Claim
from sparsedebug.render.memo.guard import Marks, guarded

RUN_TAG_WORDS = {"device": "device", "capability": "compute capability", "cuda_runtime": "CUDA runtime",
                 "cuda_driver": "CUDA driver API", "driver": "GPU driver", "torch": "torch", "launch": "launch", "backend": "backend"}
MACHINE_TAG_WORDS = {"git": "sparsedebug git", "python": "python", "numpy": "numpy", "blas": "blas", "torch": "torch", "gpu": "gpu"}


@guarded
def build_tags(st: Marks, c: Claim) -> str:
    """Each run's tags from its own artifact (``signoff.tags``), then the machine that analysed them, labelled as such."""
    t = c.terms
    parts = []
    for role in c.items:
        same = t.get(f"run.{role}.same_as")
        if same:
            parts.append(f"{role} run: the same as the {same} run")
            continue
        tags = [f"{w} {st.code(t[f'run.{role}.{k}'])}" for k, w in RUN_TAG_WORDS.items() if f"run.{role}.{k}" in t]
        if t.get(f"run.{role}.clock") == "measured":  # a replay is timed on the machine that analyses it
            tags.insert(0, "timed on the analysing machine")
        parts.append(f"{role} run (from its {t.get(f'run.{role}.source', 'record')}): {', '.join(tags)}")
    machine = ", ".join(f"{w} {st.code(t[f'machine.{k}'])}" for k, w in MACHINE_TAG_WORDS.items() if f"machine.{k}" in t)
    if machine:
        here = any(t.get(f"run.{role}.clock") == "measured" for role in c.items)
        label = "analysing machine" if here else "analysing machine (not the runs')"
        parts.append(f"{label}: {machine}")
    return "; ".join(parts) + "."
