"""The review document's invariants: named rules checked where the document is built, each withholding what breaks it.

A rule reads the memo model (and the bundle it was built from) and names the claims that would state a contradiction.
``enforce`` marks each such claim withheld by the first rule it breaks (``Claim.withheld``): the renderers then print
which check withheld it instead of its sentence, so a violated invariant never reaches the text as a contradiction.
Rules:

- ``part_within_forward``: a part of a forward (host wait, one layer's time) is stated per forward or per iteration
  and is not larger than that run's forward (its latency p50 in the document, or the mean of its latency samples
  when larger: a part per iteration is itself a mean);
- ``one_count_per_layer_set``: one set of layers has one count in the document: one figure per (quantity, run, source)
  has one value, a count is not smaller than the names it lists, and the first stage's count is the number of layers
  its findings cover (a pooled group counts each member), the count the stage's own facts state;
- ``no_placeholder``: no name or term of a claim holds a template placeholder (``{i}``);
- ``no_repeated_item``: no claim lists an item twice, and no list of claims (competing mechanisms, missing
  evidence) names one mechanism twice;
- ``check_agrees_with_limit``: a check held to a limit by its figure alone fails only with a figure past it and
  passes only with every figure within it; a check a significance test decides may pass with a figure past its limit
  only when the test put the difference within noise; the figures the claim says are past their limits are those;
- ``failing_only_when_failing``: the reasons list only failing checks (or checks an undecided verdict fails by
  policy), and the decision names as blocking only those and the checks missing evidence leaves undecided;
- ``verdict_with_significance``: a speed check fails only on a loss and passes only on a win or no change by the rank
  test; "a measured win" is stated only on the test's win, "worse than the baseline" only beside a failing check;
- ``share_words_agree``: an established mechanism carries a positive share of the change, and shares that add past
  the whole change state what moved the other way;
- ``saving_within_layers``: the time a fix says it removes is not larger than the candidate's forward, nor than the
  time of the layers it changes (their per-iteration time in the candidate run);
- ``tags_from_own_artifact``: a run not timed on the analysing machine carries none of that machine's tags, and each
  run's tags are those of its own artifact (``signoff.tags.run_tags``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from statistics import fmean

from sparsedebug.records.memo import Claim, Figure, Memo
from sparsedebug.signoff.memo_engine import LIMIT_QUANTITY, past_limit
from sparsedebug.signoff.memo_results import MISSING_CHECK
from sparsedebug.signoff.metrics import layer_rows
from sparsedebug.signoff.tags import MACHINE_ONLY_TAGS, run_tags
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

# What a significance test may say of a figure past its limit on a check that still passes (``check_judgement``).
WITHIN_NOISE: frozenset[str] = frozenset({"no_change", "not_significant"})

# The statuses a speed check may take on each judgement of the rank test.
VERDICT_STATUS: dict[str, frozenset[str]] = {
    "loss": frozenset({"fail"}), "win": frozenset({"pass"}), "no_change": frozenset({"pass"}),
    "inconclusive": frozenset({"inconclusive"}),
}

# Shares of the change that add past this are said to over-explain it (rounding of each share allowed for).
SHARE_PAST_WHOLE = 1.005

# A saving may exceed the layers' time by rounding only (the fix's figure is rounded to 1e-6 ms).
SAVING_TOLERANCE = 1e-6


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
            bound = _forward_bound(memo, bundle, f.role)
            if bound is not None and f.value > bound:
                yield Violation("part_within_forward", claim, f.quantity, f.value, bound)


def _forward_bound(memo: Memo, bundle: LoadedBundle | None, role: str | None) -> float | None:
    """The largest a part of one forward of ``role``'s run can be: its forward's p50 in the document, or, with the
    bundle, the mean of its latency samples when larger (a part stated per iteration is a sum over the iterations
    divided by their count, a mean: under load a few slow iterations lift it past the median forward)."""
    forward = _forward(memo, role)
    run = bundle.runs().get(role or "") if bundle is not None else None
    samples = run.outcome.latency_samples_ms if run is not None else []
    bounds = [b for b in (forward.value if forward is not None else None, fmean(samples) if samples else None) if b is not None]
    return max(bounds) if bounds else None


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


def _limited(claim: Claim) -> list[tuple[Figure, str]]:
    """The claim's figures held to a limit it states, each with whether it is past that limit."""
    out = []
    for f in claim.figures:
        direction = claim.terms.get(f"limit.{f.quantity}")
        limit = claim.figure(LIMIT_QUANTITY[f.quantity]) if f.quantity in LIMIT_QUANTITY else None
        if direction is not None and limit is not None and f.role != "baseline":
            out.append((f, "past" if past_limit(f.value, limit.value, direction) else "within"))
    return out


def _checks(memo: Memo) -> list[Claim]:
    return [c for c in (*memo.checks, *memo.reasons) if c.terms.get("status") in ("pass", "fail")]


def check_agrees_with_limit(memo: Memo, bundle: LoadedBundle | None) -> Iterable[Violation]:
    """A check's pass or fail agrees with its figures and limits (or with the test that put a difference within noise)."""
    for claim in _checks(memo):
        limited = _limited(claim)
        past = [f for f, side in limited if side == "past"]
        said = [q for q in claim.terms.get("beyond_limit", "").split(",") if q]
        if sorted(said) != sorted(f.quantity for f in past):
            yield Violation("check_agrees_with_limit", claim, ",".join(said) or "beyond_limit")
            continue
        judgement = claim.terms.get("judgement", "")
        if claim.terms["status"] == "fail" and limited and not past and not judgement:
            yield Violation("check_agrees_with_limit", claim, limited[0][0].quantity, limited[0][0].value)
        elif claim.terms["status"] == "pass" and past and judgement not in WITHIN_NOISE:
            yield Violation("check_agrees_with_limit", claim, past[0].quantity, past[0].value)


def _failing(memo: Memo) -> set[str]:
    """The checks that keep the decision from ship: failing, failed by policy when undecided, missing evidence."""
    out = {c.code or "" for c in memo.checks if c.terms.get("status") == "fail" or (
        c.terms.get("status") == "inconclusive" and c.terms.get("on_inconclusive") == "fail")}
    return out | {MISSING_CHECK[e] for c in memo.reasons if c.code == "missing_evidence"
                  for e in (c.terms.get("evidence", ""),) if e in MISSING_CHECK}


def failing_only_when_failing(memo: Memo, bundle: LoadedBundle | None) -> Iterable[Violation]:
    """Failing words (a reason, a blocking check) only on a check that fails the gate."""
    for claim in memo.reasons:
        status = claim.terms.get("status")
        if status in ("pass", "skipped") or (status == "inconclusive" and claim.terms.get("on_inconclusive") != "fail"):
            yield Violation("failing_only_when_failing", claim, claim.code or "")
    if memo.checks:
        failing = _failing(memo)
        for item in memo.decision.items:
            if item not in failing:
                yield Violation("failing_only_when_failing", memo.decision, item)
                break


def verdict_with_significance(memo: Memo, bundle: LoadedBundle | None) -> Iterable[Violation]:
    """A win or a loss is stated only with the significance result behind it."""
    for claim in _checks(memo):
        judgement = claim.terms.get("judgement", "")
        if claim.code != "effective_speedup" or judgement not in VERDICT_STATUS:
            continue
        if claim.terms["status"] not in VERDICT_STATUS[judgement]:
            yield Violation("verdict_with_significance", claim, judgement)
    speed = memo.decision.terms.get("speed_judgement")
    for claim in memo.reasons:
        if claim.code == "win_missing_evidence" and speed is not None and speed != "win":
            yield Violation("verdict_with_significance", claim, speed)
        if claim.code == "worse_than_baseline" and memo.checks and not any(c.terms.get("status") == "fail" for c in memo.checks):
            yield Violation("verdict_with_significance", claim, "no failing check")


def share_words_agree(memo: Memo, bundle: LoadedBundle | None) -> Iterable[Violation]:
    """An established mechanism carries a positive share; shares past the whole change say what pulled the other way."""
    h = memo.hypothesis
    if h is None:
        return
    share = h.primary.figure("carried_share")
    if h.primary.code == "established" and share is not None and share.value <= 0:
        yield Violation("share_words_agree", h.primary, share.quantity, share.value, 0.0)
    shares = [f for c in (h.primary, *h.competing) for f in c.figures if f.quantity == "carried_share"]
    if sum(max(f.value, 0.0) for f in shares) > SHARE_PAST_WHOLE and h.primary.figure("unattributed_ms") is None \
            and not any(f.value < 0 for f in shares):
        yield Violation("share_words_agree", h.primary, "carried_share", sum(max(f.value, 0.0) for f in shares), 1.0)


def saving_within_layers(memo: Memo, bundle: LoadedBundle | None) -> Iterable[Violation]:
    """A fix's expected saving is not larger than the forward, nor than the time of the layers it changes."""
    change = memo.action.change if memo.action is not None else None
    removes = change.figure("removes_ms") if change is not None else None
    if change is None or removes is None:
        return
    forward = _forward(memo, "candidate")
    if forward is not None and removes.value > forward.value:
        yield Violation("saving_within_layers", change, removes.quantity, removes.value, forward.value)
        return
    fix = bundle.classification.fix if bundle is not None and bundle.classification is not None else None
    layers = sorted({name for t in fix.targets for name in t.layers}) if fix is not None else []
    if bundle is None or not layers:
        return
    times = {r.name: r.time_ms for r in layer_rows(bundle.candidate)}
    if all(times.get(name) is not None for name in layers):
        total = sum(times[name] or 0.0 for name in layers)
        if removes.value > total * (1 + SAVING_TOLERANCE):
            yield Violation("saving_within_layers", change, removes.quantity, removes.value, total)


def tags_from_own_artifact(memo: Memo, bundle: LoadedBundle | None) -> Iterable[Violation]:
    """No run timed elsewhere carries the analysing machine's tags; each run's tags are its own artifact's."""
    if memo.symptom is None:
        return
    claim = memo.symptom.build_tags
    runs = bundle.runs() if bundle is not None else {}
    for role in claim.items:
        prefix = f"run.{role}."
        tags = {k.removeprefix(prefix): v for k, v in claim.terms.items() if k.startswith(prefix)}
        if tags.get("clock") != "measured" and tags.keys() & MACHINE_ONLY_TAGS:
            yield Violation("tags_from_own_artifact", claim, f"{prefix}{sorted(tags.keys() & MACHINE_ONLY_TAGS)[0]}")
            return
        run = runs.get(role)
        own = run_tags(run) if run is not None else {}
        wrong = sorted(k for k, v in tags.items() if k in own and own[k] != v)
        if wrong:
            yield Violation("tags_from_own_artifact", claim, f"{prefix}{wrong[0]}")
            return


# Every invariant of the review document, by name (the name the memo prints for a claim it withheld).
RULES: dict[str, Rule] = {
    "part_within_forward": part_within_forward,
    "one_count_per_layer_set": one_count_per_layer_set,
    "no_placeholder": no_placeholder,
    "no_repeated_item": no_repeated_item,
    "check_agrees_with_limit": check_agrees_with_limit,
    "failing_only_when_failing": failing_only_when_failing,
    "verdict_with_significance": verdict_with_significance,
    "share_words_agree": share_words_agree,
    "saving_within_layers": saving_within_layers,
    "tags_from_own_artifact": tags_from_own_artifact,
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
