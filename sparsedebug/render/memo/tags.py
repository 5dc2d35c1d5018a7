"""The memo's build and runtime tags in words: each run's from its own artifact, then the analysing machine's."""

from __future__ import annotations

from sparsedebug.records.memo import Claim
from sparsedebug.render.memo.claims import MAX_LINE
from sparsedebug.render.memo.guard import Marks, guarded, withheld
from sparsedebug.render.words.dispatch import listed

RUN_TAG_WORDS = {"device": "device", "capability": "compute capability", "cuda_runtime": "CUDA runtime",
                 "cuda_driver": "driver API", "driver": "GPU driver", "torch": "torch", "launch": "launch", "backend": "backend"}
# The analysing machine's tags in two groups (the machine and the walk's folder, then its Python stack): one line when
# they fit the memo's line limit, a line per group on a machine with several BLAS libraries or GPUs.
MACHINE_TAG_WORDS = ({"sparsedebug": "sparsedebug", "git": "git of the folder it ran in", "gpu": "gpu"},
                     {"python": "python", "numpy": "numpy", "blas": "blas", "torch": "torch"})


@guarded
def build_tags(st: Marks, c: Claim) -> str:
    """Each run's tags from its own artifact (``signoff.tags``), then the machine that analysed them, labelled as such."""
    return "; ".join(build_tags_parts(st, c)) + "."


def build_tags_parts(st: Marks, c: Claim) -> list[str]:
    """:func:`build_tags` one part a line: each run's, then the analysing machine's (a withheld claim: why, alone)."""
    if c.withheld:
        return [withheld(st, c)]
    t = c.terms
    groups: list[tuple[list[str], str]] = []  # runs whose tags equal the run before them share its line
    for role in c.items:
        if t.get(f"run.{role}.same_as") and groups:
            groups[-1][0].append(role)
            continue
        tags = [f"{w} {st.code(t[f'run.{role}.{k}'])}" for k, w in RUN_TAG_WORDS.items() if f"run.{role}.{k}" in t]
        if t.get(f"run.{role}.clock") == "measured":  # a replay is timed on the machine that analyses it
            tags.insert(0, "timed on the analysing machine")
        like = t.get(f"run.{role}.like")
        if like:
            groups.append(([role], f"as the {like} run, but {', '.join(tags)}"))
        else:
            groups.append(([role], f"(tags from {t.get(f'run.{role}.source_what', 'its run record')}): {', '.join(tags)}"))
    parts = [f"{listed(roles)} run{'s' if len(roles) > 1 else ''} {text}" for roles, text in groups]
    here = any(t.get(f"run.{role}.clock") == "measured" for role in c.items)
    label = "analysing machine" if here else "analysing machine (not the runs')"
    groups_said = [", ".join(f"{w} {st.code(t[f'machine.{k}'])}" for k, w in words.items() if f"machine.{k}" in t)
                   for words in MACHINE_TAG_WORDS]
    machine = ", ".join(g for g in groups_said if g)
    if len(f"  - {label}: {machine}") <= MAX_LINE:
        return [*parts, f"{label}: {machine}"] if machine else parts
    return [*parts, *(f"{name}: {g}" for name, g in zip((label, "analysing machine's Python stack"), groups_said, strict=True) if g)]
