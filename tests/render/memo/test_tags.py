"""The build and runtime tags in words: each run's tags, then the analysing machine's, within the memo's line limit."""

from __future__ import annotations

from sparsedebug.records.memo import Claim
from sparsedebug.render.memo.claims import MAX_LINE
from sparsedebug.render.memo.phrases import MD
from sparsedebug.render.memo.tags import build_tags_parts

RUN = {"run.candidate.source_what": "a PyTorch trace", "run.candidate.device": "NVIDIA H200", "run.candidate.clock": "traced",
       "run.baseline.same_as": "candidate"}


def _machine(blas: str, gpu: str) -> dict[str, str]:
    return {"machine.sparsedebug": "0.1.0", "machine.git": "1ca601b7f921", "machine.python": "CPython 3.11.7",
            "machine.numpy": "2.4.6", "machine.blas": blas, "machine.gpu": gpu}


def test_a_short_machine_line_stays_one_line_labelled_as_not_the_runs() -> None:
    parts = build_tags_parts(MD, Claim(kind="build_tags", items=["candidate", "baseline"], terms={**RUN, **_machine("openblas 0.3.30", "none")}))
    assert parts[0].startswith("candidate and baseline runs (tags from a PyTorch trace): device `NVIDIA H200`")
    assert parts[1:] == ["analysing machine (not the runs'): sparsedebug `0.1.0`, git of the folder it ran in `1ca601b7f921`, "
                         "gpu `none`, python `CPython 3.11.7`, numpy `2.4.6`, blas `openblas 0.3.30`"]


def test_a_machine_with_several_blas_libraries_and_gpus_gets_a_line_per_group_within_the_limit() -> None:
    blas = "openblas 0.3.30, openblas 0.3.31.188.0, mkl 2024.2.0, blis 1.0"
    parts = build_tags_parts(MD, Claim(kind="build_tags", items=["candidate", "baseline"],
                                       terms={**RUN, **_machine(blas, "8x NVIDIA H200, 2x NVIDIA A100-SXM4-80GB")}))
    assert parts[1].startswith("analysing machine (not the runs'): sparsedebug `0.1.0`") and "gpu `8x NVIDIA H200" in parts[1]
    assert parts[2].startswith("analysing machine's Python stack: python `CPython 3.11.7`") and f"blas `{blas}`" in parts[2]
    assert all(len(f"  - {p}") <= MAX_LINE for p in parts)
