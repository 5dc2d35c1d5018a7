"""Step 2 of the playbook: the walk to the first persistent stage where a candidate diverges from its baseline.

``bisect_runs(base, cand)`` runs the five stage tests in order, one module each:
``graph`` and ``lower`` are categorical (:mod:`sparsedebug.locate.graph`,
:mod:`sparsedebug.locate.lower`), ``kernel``, ``schedule`` and ``outcome`` are tested on
raw samples (:mod:`sparsedebug.locate.kernel`, :mod:`sparsedebug.locate.schedule`,
:mod:`sparsedebug.locate.outcome`). The first stage that diverged for real is the
answer; a stage that improved is reported as such, never as a regression, and with too
few samples to decide a stage is ``undecided`` and says so. The walk ranks the layers
by their contribution to the outcome change, lists the downstream stages the first
divergence explains, and phrases the verdict.
"""

from __future__ import annotations

from sparsedebug.core.stats import DEFAULT_ALPHA, DEFAULT_MIN_EFFECT, SampleComparison, median
from sparsedebug.core.timing import unstable_runs
from sparsedebug.locate.common import calls_per_iteration, group_key, iteration_count, undecided_improvement, undecided_regression
from sparsedebug.locate.graph import graph_stage
from sparsedebug.locate.kernel import kernel_stage
from sparsedebug.locate.lower import lower_stage
from sparsedebug.locate.outcome import outcome_stage
from sparsedebug.locate.reference import machine_drift, session_block
from sparsedebug.locate.schedule import schedule_stage
from sparsedebug.records.findings import BisectResult, BisectState, RankedLayer, StageFinding
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import STAGES, RunRecord
from sparsedebug.records.stats import DEFAULT_MIN_SAMPLES


def rank_layers(base: RunRecord, cand: RunRecord, involved: set[str], outcome_delta: float | None) -> list[RankedLayer]:
    """Every layer's change of kernel plus idle time per iteration, the ``involved`` ones first, largest first.

    The one split of the outcome change into what each layer carries: bisect ranks by it and
    classify attributes each layer's share to a mechanism (:mod:`sparsedebug.classify.attribution`).
    """
    b_kernel = {layer.name: layer.samples_ms for layer in base.kernel.layers if layer.samples_ms}
    c_kernel = {layer.name: layer.samples_ms for layer in cand.kernel.layers if layer.samples_ms}
    b_idle, c_idle = base.schedule.layer_idle_samples_ms, cand.schedule.layer_idle_samples_ms
    bi, ci = iteration_count(base), iteration_count(cand)

    def per_iteration(samples: dict[str, list[float]], name: str, iterations: int) -> float:
        values = samples.get(name)
        if not values:
            return 0.0
        return median(values) * calls_per_iteration(values, iterations)

    ranked = []
    for name in list(dict.fromkeys([*c_kernel, *b_kernel, *c_idle, *b_idle])):
        # A per-call weight conversion is in the host gap before the layer's compute, never in its
        # kernel samples (records.run): counted once, in the idle time.
        kernel = per_iteration(c_kernel, name, ci) - per_iteration(b_kernel, name, bi)
        idle = per_iteration(c_idle, name, ci) - per_iteration(b_idle, name, bi) if (b_idle and c_idle) else 0.0
        total = kernel + idle
        share = total / outcome_delta if outcome_delta else None
        ranked.append(
            RankedLayer(
                layer=name, contribution_ms=total, kernel_ms=kernel, idle_ms=idle, share=share,
                involved=name in involved or group_key(name) in involved,
            )
        )
    sign = 1.0 if (outcome_delta or 0.0) >= 0 else -1.0
    ranked.sort(key=lambda r: (not r.involved, -sign * r.contribution_ms))
    return ranked


def bisect_runs(
    base: RunRecord,
    cand: RunRecord,
    *,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    min_cosine: float | None = None,
    min_samples: int = DEFAULT_MIN_SAMPLES,
) -> BisectResult:
    """Walk the five stages of ``base`` and ``cand`` and name the first persistent divergence.

    ``alpha``, ``min_effect`` and ``min_samples`` are the rule (``core.judgement``) of every sample comparison;
    ``min_cosine`` is an optional quality guardrail on the candidate's output
    cosine. Returns a ``BisectResult`` whose ``state`` is ``divergence`` (with
    ``first_stage``), ``no_regression`` or ``undecided`` (too few samples where
    it mattered). For two replays whose dense references are the same computation, a
    change within how far the machine itself moved that identical work between them
    (:func:`sparsedebug.locate.reference.machine_drift`) is not read as a change.
    """
    drift = machine_drift(base, cand)
    lower = lower_stage(base, cand)
    stages = [
        graph_stage(base, cand),
        lower,
        kernel_stage(base, cand, lower, alpha, min_effect, drift, min_samples),
        schedule_stage(base, cand, alpha, min_effect, drift, min_samples),
        outcome_stage(base, cand, alpha, min_effect, min_cosine, drift, min_samples),
    ]
    assert [s.stage for s in stages] == list(STAGES)
    same_rounds = session_block(base, cand) is not None  # one session: sustained contention hit both sides alike
    unstable = unstable_runs([(base.name, base.outcome.timing), (cand.name, cand.outcome.timing)], same_rounds=same_rounds)
    if unstable:
        stages = [_inconclusive(s, ", ".join(unstable)) if s.stage in TIMED_STAGES else s for s in stages]

    outcome = stages[-1]
    outcome_cmp = outcome.headline.comparison if outcome.headline else None
    outcome_delta = (outcome_cmp.cand_median - outcome_cmp.base_median) if outcome_cmp else None
    first = next((s for s in stages if s.status == "divergent"), None)
    ranked = rank_layers(base, cand, _involved(first), outcome_delta)
    first_change = _first_change_ms(first, ranked)
    explains, unexplained = _explains(first, stages, first_change)
    accounted = sum(r.contribution_ms for r in ranked if r.involved) / outcome_delta if first is not None and outcome_delta else None
    effect_metric, effect = _effect(first, outcome_cmp)
    state: BisectState
    undecided = [s for s in stages if s.status == "undecided"]
    verdict: list[Note]
    if first is not None:
        state, verdict = "divergence", _divergence_verdict(first, undecided, explains, accounted, outcome_cmp)
    elif undecided:
        state = "undecided"
        verdict = [note("locate.verdict.undecided", unstable=bool(unstable), stages=[s.stage for s in undecided])]
    else:
        state, verdict = "no_regression", _no_regression_verdict(stages, outcome_cmp)
    return BisectResult(
        base=base.name,
        cand=cand.name,
        state=state,
        first_stage=first.stage if first is not None else None,
        stages=stages,
        layers=ranked,
        effect_metric=effect_metric,
        effect=effect,
        outcome=outcome_cmp,
        outcome_delta_ms=outcome_delta,
        explains=explains,
        unexplained=unexplained,
        first_change_ms=first_change,
        accounted_share=accounted,
        reference=drift.facts,
        verdict=verdict,
    )


# Stages decided on timing samples: inconclusive when either run's timings were unstable.
TIMED_STAGES = ("kernel", "schedule", "outcome")


# Layer findings that rest on timing samples (precision, quality and fallback findings do not).
TIMING_KINDS = frozenset({"slower", "faster", "idle_grew", "idle_shrank"})


def _inconclusive(stage: StageFinding, reason: str) -> StageFinding:
    """A timed stage made ``undecided``: its timing comparisons stand on disturbed samples.

    Findings that do not rest on timings (a precision or quality regression) keep the
    stage divergent.
    """
    if stage.status not in ("divergent", "improved", "same", "undecided"):
        return stage
    layers = [f.model_copy(update={"regression": False}) if f.kind in TIMING_KINDS else f for f in stage.layers]
    if any(f.regression for f in layers):
        return stage.model_copy(update={"layers": layers, "unstable": reason})
    return stage.model_copy(update={"status": "undecided", "layers": layers, "unstable": reason})


def _involved(first: StageFinding | None) -> set[str]:
    """The layers (and pooled members) the first divergent stage's regressions name."""
    involved: set[str] = set()
    if first is not None:
        for f in first.layers:
            if f.regression:
                involved.add(f.layer)
                involved.update(f.members)
    return involved


# A later stage's change is explained by the first divergence only when that divergence changed at least this share of
# it.
EXPLAINS_MIN_SHARE = 0.5


def _stage_change_ms(stage: StageFinding) -> float | None:
    """A stage's change in ms per iteration: its headline metric's median change (every headline is in ms)."""
    head = stage.headline.comparison if stage.headline else None
    return head.cand_median - head.base_median if head is not None else None


def _first_change_ms(first: StageFinding | None, ranked: list[RankedLayer]) -> float | None:
    """How much the first divergence changed, in ms per iteration: its headline's median change, else what the
    layers it names carry (a categorical stage: graph, lower)."""
    if first is None:
        return None
    change = _stage_change_ms(first)
    if change is not None:
        return change
    involved = [r.contribution_ms for r in ranked if r.involved]
    return sum(involved) if involved else None


def _explains(first: StageFinding | None, stages: list[StageFinding], first_change: float | None) -> tuple[list[str], list[str]]:
    """The later stages that also diverged (or lean towards a regression on too few samples), split into those the first
    divergence's change carries (at least ``EXPLAINS_MIN_SHARE`` of theirs, same sign) and those it does not."""
    if first is None:
        return [], []
    explains: list[str] = []
    unexplained: list[str] = []
    for later in stages[STAGES.index(first.stage) + 1 :]:
        head = later.headline.comparison if later.headline else None
        if not (later.status == "divergent" or (head is not None and undecided_regression(head))):
            continue
        change = _stage_change_ms(later)
        if change is None or first_change is None or abs(change) <= 0 or first_change / change >= EXPLAINS_MIN_SHARE:
            explains.append(later.stage)
        else:
            unexplained.append(later.stage)
    return explains, unexplained


def _effect(first: StageFinding | None, outcome: SampleComparison | None) -> tuple[str | None, SampleComparison | None]:
    """The effect size to report: the first stage's metric, else its largest layer finding, else the outcome's."""
    if first is None:
        return None, None
    if first.headline is not None and first.headline.comparison.enough_samples:
        return first.headline.metric, first.headline.comparison
    grouped = sorted((f for f in first.layers if f.regression and f.comparison is not None), key=lambda f: -abs(f.delta_ms or 0.0))
    if grouped and grouped[0].comparison is not None:
        return f"{first.stage}:{grouped[0].layer}", grouped[0].comparison
    if outcome is not None:
        return "latency_ms", outcome
    return None, None


def _divergence_verdict(
    first: StageFinding,
    undecided: list[StageFinding],
    explains: list[str],
    accounted: float | None,
    outcome: SampleComparison | None,
) -> list[Note]:
    """The facts of a divergence: the stage, what it explains, and the share of the outcome change it carries."""
    verdict = [note("locate.verdict.divergence", stage=first.stage)]
    before = [s.stage for s in undecided if STAGES.index(s.stage) < STAGES.index(first.stage)]
    if before:
        verdict.append(note("locate.verdict.earlier_undecided", stages=before))
    if explains:
        verdict.append(note("locate.verdict.explains", stages=explains))
    if accounted is not None and outcome is not None:
        delta = outcome.cand_median - outcome.base_median
        moved = outcome.direction != "same" or not outcome.enough_samples
        if moved and -0.5 <= accounted <= 1.5:
            verdict.append(note("locate.verdict.carries", share=accounted, delta_ms=delta))
        elif moved:
            verdict.append(note("locate.verdict.overlap", share=accounted, delta_ms=delta))
        else:
            verdict.append(note("locate.verdict.outcome_flat"))
    return verdict


def _no_regression_verdict(stages: list[StageFinding], outcome: SampleComparison | None) -> list[Note]:
    """The facts when nothing diverged: how much faster the outcome got, and which stages improved."""
    verdict = [note("locate.verdict.no_regression")]
    if outcome is not None and (outcome.direction == "faster" or undecided_improvement(outcome)):
        verdict.append(note("locate.verdict.outcome_improved", speedup=1 / outcome.ratio, base_p50=outcome.base_median,
                            cand_p50=outcome.cand_median, enough=outcome.enough_samples, n_base=outcome.n_base, n_cand=outcome.n_cand))
    improved = [s.stage for s in stages if s.status == "improved"]
    if improved:
        verdict.append(note("locate.verdict.improved", stages=improved))
    return verdict
