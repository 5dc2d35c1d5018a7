"""The memo's lines on a multi-rank job: straggler, confined or uniform change, and the rank walked."""

from __future__ import annotations

from sparsedebug.records.loaded import LoadedBundle
from sparsedebug.render.words.notes import say


def rank_lines(bundle: LoadedBundle) -> list[str]:
    """``### Ranks`` with one line per finding of ``ranks.json``; nothing for a single-rank walk."""
    comparison = bundle.ranks
    if comparison is None:
        return []
    out = ["### Ranks", "", f"- {comparison.ranks} ranks on each side ({comparison.baseline} -> {comparison.candidate}), compared rank to rank."]
    out += [f"- {say(finding)}" for finding in comparison.findings]
    if comparison.baseline_straggler is None and comparison.candidate_straggler is None:
        out.append("- no straggler on either side: no rank arrives last at the dominant collective consistently")
    winner = bundle.classification.winner if bundle.classification is not None else None
    walked = f"- the five steps below compare rank {comparison.walked_rank} with its baseline rank"
    if comparison.confined_to and winner is not None:
        walked += f": the change there is {winner.value}, and the other ranks' waits at the collectives follow from it"
    out += [walked, ""]
    return out
