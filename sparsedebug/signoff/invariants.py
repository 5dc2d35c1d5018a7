"""The review document's invariants: named rules checked where the document is built, each withholding what breaks it.

A rule reads the memo model (and the bundle it was built from) and names the claims that would state a contradiction.
``enforce`` marks each such claim withheld by the first rule it breaks (``Claim.withheld``): the renderers then print
which check withheld it instead of its sentence, so a violated invariant never reaches the text as a contradiction.
Rules:

- ``part_within_forward``: a part of a forward (host wait, one layer's time) is stated per forward or per iteration
  and is not larger than that run's forward (its latency p50 in the document);
- ``one_count_per_layer_set``: one set of layers has one count in the document: one figure per (quantity, run, source)
  has one value, a count is not smaller than the names it lists, and the first stage's count is the number of layers
  its findings cover (a pooled group counts each member), the count the stage's own facts state;
- ``no_placeholder``: no name or term of a claim holds a template placeholder (``{i}``);
- ``no_repeated_item``: no claim lists an item twice, and no list of claims (competing mechanisms, missing
  evidence) names one mechanism twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sparsedebug.records.memo import Claim, Figure, Memo
from sparsedebug.sources.bundle import LoadedBundle

# A template placeholder left in a name (``layers.{i}.mlp.up_proj``).
PLACEHOLDER = re.compile(r"\{[A-Za-z_]\w*\}")

# Figure quantities that are a part of one forward of their run.
PART_OF_FORWARD: frozenset[str] = frozenset({"host_wait_ms", "layer_ms"})

# The bases on which a part of a forward can stand beside the forward.
FORWARD_BASES: frozenset[str] = frozenset({"per_forward", "per_iteration"})

# Figure quantities that count a set of layers.
LAYER_COUNTS: frozenset[str] = frozenset({
    "layers", "layers_named", "target_layers", "meant_sparse", "fell_back", "not_picked_layers", "sparse_tactic_layers",
    "sparse_weight_layers", "weighted_layers",
})


@dataclass(frozen=True)
class Violation:
    """A claim that breaks a rule, and the fact that breaks it (for tests and ``--verify``; the memo prints the rule's
    name): the figure's quantity or the item, its value, and the bound it broke (None where the rule has none)."""

    rule: str
    claim: Claim
    subject: str
    value: float | None = None
    bound: float | None = None


Rule = Callable[[Memo, LoadedBundle | None], Iterable[Violation]]


def _forward(memo: Memo, role: str | None) -> Figure | None:
    return next((f for f in memo.figures() if f.quantity == "latency_p50_ms" and f.role == role), None)


def part_within_forward(memo: Memo, bundle: LoadedBundle | None) -> Iterable[Violation]:
    """A part of a forward is stated per forward or per iteration, and is not larger than its run's forward."""
    for claim in memo.claims():
        for f in claim.figures:
            if f.quantity not in PART_OF_FORWARD:
                continue
            if f.basis not in FORWARD_BASES:
                yield Violation("part_within_forward", claim, f.quantity, f.value)
                continue
            forward = _forward(memo, f.role)
            if forward is not None and f.value > forward.value:
                yield Violation("part_within_forward", claim, f.quantity, f.value, forward.value)


def _stage_layer_count(bundle: LoadedBundle | None) -> int | None:
    """The layers the first stage's findings cover (a pooled group counts each member), from the bisect record."""
    bis = bundle.bisect if bundle is not None else None
    if bis is None or bis.first_stage is None:
        return None
    regress = [f for f in bis.stage(bis.first_stage).layers if f.regression]
    return sum(max(len(f.members), 1) for f in regress) if regress else None


def one_count_per_layer_set(memo: Memo, bundle: LoadedBundle | None) -> Iterable[Violation]:
    """One set of layers, one count: per (quantity, run, source) one value; no count below the names it lists; the
    first stage's count is the layers its findings cover."""
    seen: dict[tuple[str, str | None, str, str], float] = {}
    for claim in memo.claims():
        for f in claim.figures:
            if f.quantity not in LAYER_COUNTS:
                continue
            key = (f.quantity, f.role, f.source.record, f.source.field)
            if key in seen and seen[key] != f.value:
                yield Violation("one_count_per_layer_set", claim, f.quantity, f.value, seen[key])
            seen.setdefault(key, f.value)
    stage = memo.symptom.first_stage if memo.symptom is not None else None
    named = stage.figure("layers_named") if stage is not None else None
    if stage is not None and named is not None:
        if named.value < len(stage.items) + stage.more:
            yield Violation("one_count_per_layer_set", stage, named.quantity, named.value, len(stage.items) + stage.more)
        covered = _stage_layer_count(bundle)
        if covered is not None and named.value != covered:
            yield Violation("one_count_per_layer_set", stage, named.quantity, named.value, covered)


def no_placeholder(memo: Memo, bundle: LoadedBundle | None) -> Iterable[Violation]:
    """No name or term of a claim holds a template placeholder."""
    for claim in memo.claims():
        for text in (*claim.items, *claim.terms.values()):
            if PLACEHOLDER.search(text):
                yield Violation("no_placeholder", claim, text)
                break


def _claim_lists(memo: Memo) -> list[list[Claim]]:
    h = memo.hypothesis
    return [h.competing, h.missing] if h is not None else []


def no_repeated_item(memo: Memo, bundle: LoadedBundle | None) -> Iterable[Violation]:
    """No claim lists an item twice; no list of claims names one mechanism (code) twice."""
    for claim in memo.claims():
        repeated = sorted({i for i in claim.items if claim.items.count(i) > 1})
        if repeated:
            yield Violation("no_repeated_item", claim, repeated[0])
    for claims in _claim_lists(memo):
        names: set[str] = set()
        for claim in claims:
            name = claim.terms.get("mechanism") or claim.code or ""
            if name in names:
                yield Violation("no_repeated_item", claim, name)
            names.add(name)


# Every invariant of the review document, by name (the name the memo prints for a claim it withheld).
RULES: dict[str, Rule] = {
    "part_within_forward": part_within_forward,
    "one_count_per_layer_set": one_count_per_layer_set,
    "no_placeholder": no_placeholder,
    "no_repeated_item": no_repeated_item,
}


def violations(memo: Memo, bundle: LoadedBundle | None = None) -> list[Violation]:
    """Every rule's violations on ``memo`` (built from ``bundle``, when given), rule by rule."""
    return [v for rule in RULES.values() for v in rule(memo, bundle)]


def enforce(memo: Memo, bundle: LoadedBundle | None = None) -> Memo:
    """The memo with each claim that breaks a rule withheld by the first rule it breaks (the claims are marked in
    place: a claim the memo states twice, as the signoff's decision, is withheld wherever it is printed)."""
    for v in violations(memo, bundle):
        if v.claim.withheld is None:
            v.claim.withheld = v.rule
    return memo
