"""Bisect's records in words: a finding, a stage's summary, the verdict (from the facts ``sparsedebug.locate`` records)."""

from __future__ import annotations

from collections.abc import Callable

from sparsedebug.records.comparability import Comparability
from sparsedebug.records.findings import BisectResult, LayerFinding, MetricFinding, StageFinding
from sparsedebug.records.notes import Note
from sparsedebug.render.words.core import comparison_words
from sparsedebug.render.words.locate import path_changes
from sparsedebug.render.words.notes import say


def clauses(facts: list[Note], word: Callable[[Note], str] = say) -> str:
    """Notes as one line: clauses joined by ``; ``, a parenthetical or what follows a colon joined by a space."""
    text = ""
    for n in facts:
        part = word(n)
        if not text:
            text = part
        elif part.startswith("(") or text.endswith(":"):
            text += " " + part
        else:
            text += "; " + part
    return text


# Findings whose timing comparison says why it is not persistent.
_TIMED_KINDS = ("slower", "idle_grew", "idle_shrank")


def finding_text(finding: LayerFinding) -> str:
    """What one layer finding shows, in words; a timing change that is not persistent says why."""
    text = say(finding.facts)
    c = finding.comparison
    if c is not None and finding.kind in _TIMED_KINDS and not c.persistent:
        text += f" ({comparison_words(c)})"
    return text


def metric_text(metric: MetricFinding) -> str:
    """What a stage's metric measures ("whole-forward latency"), empty when not recorded."""
    return say(metric.facts) if metric.facts is not None else ""


def stage_text(stage: StageFinding) -> str:
    """A stage's one-line summary; with why its timings could not decide when they were unstable."""
    head = stage.headline.comparison if stage.headline is not None else None

    changed = {f.layer: f.facts.values for f in stage.layers if f.kind == "path_changed"}

    def word(n: Note) -> str:
        if n.code == "locate.outcome.latency" and head is not None and head.enough_samples and head.direction == "same":
            return f"{say(n)} ({comparison_words(head)})"  # why the forward did not move
        layers = n.values.get("layers")
        if n.code == "locate.lower.path_changed" and isinstance(layers, list) and all(str(x) in changed for x in layers):
            return path_changes([str(x) for x in layers], [changed[str(x)] for x in layers])  # each with its change
        return say(n)

    text = clauses(stage.facts, word)
    if stage.unstable is None:
        return text
    if any(f.regression for f in stage.layers):
        return f"{text} (timings unstable in {stage.unstable})"
    return f"inconclusive, timings unstable in {stage.unstable}: {text}"


def verdict_text(result: BisectResult) -> str:
    """The answer of a bisect in one line: the divergent stage with its summary, or why there is none."""
    parts: list[Note] = []
    text = ""
    for n in result.verdict:
        if n.code == "locate.verdict.divergence":
            stage = str(n.values.get("stage"))
            text = f"{say(n)}: {stage_text(result.stage(stage))}"
        elif n.code == "locate.verdict.undecided":
            stages = n.values.get("stages")
            names = [str(s) for s in stages] if isinstance(stages, list) else []
            text = f"{say(n)}: " + "; ".join(f"{name}: {stage_text(result.stage(name))}" for name in names)
        else:
            parts.append(n)

    def word(n: Note) -> str:
        if n.code == "locate.verdict.outcome_flat" and result.outcome is not None:
            return f"{say(n)} ({comparison_words(result.outcome)})"
        return say(n)

    rest = clauses(parts, word)
    if not text:
        return rest
    if not rest:
        return text
    return text + (" " if rest.startswith("(") else "; ") + rest


def reference_text(result: BisectResult) -> str | None:
    """How far the machine itself moved between the two replays, in words (None when not measured)."""
    return say(result.reference) if result.reference is not None else None


def refusal_text(check: Comparability) -> str:
    """The one line that refuses a pair: what differs and by how much, and how to opt in."""
    blocking = [d for d in check.differences if not d.allowed]
    parts = "; ".join(f"{d.dimension}: {say(d.facts)}" for d in blocking)
    opt = " ".join(f"--allow-different {d.dimension}" for d in blocking)
    return f"{check.base} vs {check.cand}: not comparable: {parts}; pass {opt} to compare anyway"


def allowed_text(check: Comparability) -> str | None:
    """What the user allowed to differ, for the memo and the outputs (None when nothing differed)."""
    allowed = [d for d in check.differences if d.allowed]
    if not allowed:
        return None
    return "compared although they differ (--allow-different): " + "; ".join(f"{d.dimension}: {say(d.facts)}" for d in allowed)


def comparability_lines(check: Comparability) -> list[str]:
    """What was allowed to differ, then each difference a regression may carry, one line each."""
    allowed = allowed_text(check)
    return ([allowed] if allowed else []) + [say(n) for n in check.notes]
