"""Step 4 of the playbook: reduce a good/bad workload pair to one focused reproducer.

``reduce_workloads(good, bad)``:

1. **Target.** Bisects the pair once to learn what to reproduce: the first
   divergent stage and, for the categorical stages (graph, lower), the kind of
   finding (a fallback, a per-call conversion, ...). Graph and lower are
   decided by a *static probe* (the graph source's graph and lower stages, no
   timing: ``GraphSource.static_stages``); only when
   they show nothing are both workloads replayed with timing.
2. **Changes.** Lists every difference between the two workloads: each knob
   (conversion, precision, backend, threads, seed, tokens, pruning, ...) and
   each layer that differs, was added or was removed.
3. **ddmin** (``sparsedebug.reduce.search.DDMin``) over those changes: probes the
   good workload with a subset of the bad one's changes applied and keeps a
   1-minimal subset that still reproduces the target. Invalid variants are
   unresolved, never kept. Independent causes of other kinds in the same stage
   are reduced too and reported.
4. **Shrink** the reproducer's graph (applied identically to the baseline):
   fewest blocks, then fewest layers (consumers of a dropped layer read its
   input instead), then fewest tokens and narrowest widths (halving) that
   still reproduce.
5. **Confirm** with a timed replay of both shrunk workloads and a full bisect.

Timed probes are re-measured with twice the repeats when their answer is
undecided or not persistent (a flaky probe); a probe still undecided counts as
unresolved. A regression that cannot be reproduced at the start is reported as
such, with nothing reduced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sparsedebug.core.errors import UserError
from sparsedebug.locate.common import finding_signature
from sparsedebug.locate.walk import bisect_runs
from sparsedebug.records.defaults import DEFAULT_MAX_PROBES as DEFAULT_MAX_PROBES
from sparsedebug.records.defaults import DEFAULT_PROBE_REPEATS as DEFAULT_PROBE_REPEATS
from sparsedebug.records.findings import BisectResult
from sparsedebug.records.notes import Note, NoteValue, note
from sparsedebug.records.reduce import Cause, Change, Phase, ProbeLog, ReduceResult
from sparsedebug.records.run import (
    STAGES,
    KernelStage,
    OutcomeStage,
    RunRecord,
    RunSource,
    ScheduleStage,
)
from sparsedebug.records.stats import DEFAULT_ALPHA, DEFAULT_MIN_EFFECT
from sparsedebug.reduce.search import DDMin, Outcome
from sparsedebug.reduce.shrink import apply_changes, block_of, diff_workloads, half_tokens, keep_layers
from sparsedebug.reduce.treatment import scale_keeping_treatment
from sparsedebug.sources.replay.sources import graph_source
from sparsedebug.sources.workload.schema import Workload, absolute_paths

_KIND_PRIORITY = ("removed", "added", "changed", "fallback", "path_changed", "new_kernel_class", "per_call_conversion")
_CATEGORICAL = ("graph", "lower")


# Progress events: each a coded note (codes ``reduce.*``) the caller words (``render.words.core``).
Progress = Callable[[Note], None]
ProbeNote = Literal["earlier_stage", "other_finding", "uncertain", "still_undecided"] | None


# --------------------------------------------------------------------------- changes


# --------------------------------------------------------------------------- graph shrinking


# --------------------------------------------------------------------------- probing


class _Prober:
    """Runs probes (static or timed), counts them, logs them, and classifies their outcome."""

    def __init__(self, probe_repeats: int, max_probes: int, progress: Progress | None, dirs: tuple[Path | None, Path | None], alpha: float, min_effect: float) -> None:
        self.probe_repeats = probe_repeats
        self.max_probes = max_probes
        self.progress = progress
        self.dirs = dirs
        self.alpha = alpha
        self.min_effect = min_effect
        self.replays = 0
        self.static = 0
        self.flaky = 0
        self.log: list[ProbeLog] = []
        self._static_cache: dict[str, RunRecord] = {}

    @property
    def exhausted(self) -> bool:
        return len(self.log) >= self.max_probes

    def say(self, code: str, **values: NoteValue) -> None:
        if self.progress is not None:
            self.progress(note(code, **values))

    def static_run(self, workload: Workload, base_dir: Path | None) -> RunRecord:
        key = workload.model_dump_json()
        cached = self._static_cache.get(key)
        if cached is not None:
            return cached
        self.static += 1
        graph, lower = graph_source(workload, base_dir).static_stages()
        record = RunRecord(
            name=workload.name,
            source=RunSource(kind="replay"),
            graph=graph,
            lower=lower,
            kernel=KernelStage(layers=[]),
            schedule=ScheduleStage(span_samples_ms=[], busy_samples_ms=[]),
            outcome=OutcomeStage(latency_samples_ms=[]),
        )
        self._static_cache[key] = record
        return record

    def timed_run(self, workload: Workload, base_dir: Path | None, repeats: int) -> RunRecord:
        """Full replay; weight and calibration paths were made absolute beforehand, so ``base_dir`` is unused."""
        from sparsedebug.sources.replay.replay import replay

        self.replays += 1
        return replay(workload, repeats=repeats)

    def bisect(self, base: RunRecord, cand: RunRecord) -> BisectResult:
        return bisect_runs(base, cand, alpha=self.alpha, min_effect=self.min_effect)

    def probe(self, phase: Phase, description: str, base: Workload, cand: Workload, stage: str, kind: str | None) -> Outcome:
        """Whether ``cand`` still diverges from ``base`` at ``stage`` (with a finding of ``kind``)."""
        if stage in _CATEGORICAL:
            result = self.bisect(self.static_run(base, self.dirs[0]), self.static_run(cand, self.dirs[1]))
            outcome, why, earlier = _classify(result, stage, kind)
            self._record(phase, description, outcome, "static", False, why, earlier)
            return outcome
        repeats = self.probe_repeats
        flaky = False
        for attempt in range(2):
            result = self.bisect(self.timed_run(base, self.dirs[0], repeats), self.timed_run(cand, self.dirs[1], repeats))
            outcome, why, earlier = _classify(result, stage, kind)
            if why != "uncertain":
                break
            flaky = True
            repeats *= 2
            if attempt == 1:
                outcome, why = Outcome.UNRESOLVED, "still_undecided"
        if flaky:
            self.flaky += 1
        self._record(phase, description, outcome, "timed", flaky, why, earlier)
        return outcome

    def _record(
        self, phase: Phase, description: str, outcome: Outcome, mode: Literal["static", "timed"], flaky: bool, why: ProbeNote,
        earlier: str | None, invalid: str | None = None,
    ) -> None:
        probe = ProbeLog(phase=phase, description=description, outcome=outcome.value, mode=mode, flaky=flaky, note=why, earlier_stage=earlier,
                         invalid=invalid)
        self.log.append(probe)
        self.say("reduce.probe", n=len(self.log), phase=phase, tried=description, outcome=outcome.value, flaky=flaky)


def _classify(result: BisectResult, stage: str, signature: str | None) -> tuple[Outcome, ProbeNote, str | None]:
    """FAIL when the first divergence is ``stage`` with a finding of ``signature``; UNRESOLVED when an earlier stage
    diverges (that stage is returned too) or the answer is uncertain."""
    index = STAGES.index(stage)
    if result.first_stage is not None and STAGES.index(result.first_stage) < index:
        return Outcome.UNRESOLVED, "earlier_stage", result.first_stage
    finding = result.stage(stage)
    if result.first_stage == stage:
        if signature is None or any(f.regression and finding_signature(f) == signature for f in finding.layers):
            return Outcome.FAIL, None, None
        return Outcome.PASS, "other_finding", None
    if finding.status == "undecided" or (result.state == "undecided" and result.first_stage is None):
        return Outcome.UNRESOLVED, "uncertain", None
    head = finding.headline
    if head is not None and head.comparison.significant and not head.comparison.persistent:
        return Outcome.UNRESOLVED, "uncertain", None
    return Outcome.PASS, None, None


def _target(result: BisectResult) -> tuple[str | None, list[str]]:
    """The finding to reproduce (primary) and, for categorical stages, the other independent findings."""
    if result.first_stage is None:
        return None, []
    regressions = [f for f in result.stage(result.first_stage).layers if f.regression]
    if result.first_stage in _CATEGORICAL:
        ordered = sorted(regressions, key=lambda f: _KIND_PRIORITY.index(f.kind) if f.kind in _KIND_PRIORITY else len(_KIND_PRIORITY))
        signatures = list(dict.fromkeys(finding_signature(f) for f in ordered))
        return (signatures[0] if signatures else None), signatures[1:]
    ordered = sorted(regressions, key=lambda f: -abs(f.delta_ms or 0.0))
    return (finding_signature(ordered[0]) if ordered else None), []


def _cause_set(result: BisectResult, stage: str, signature: str | None) -> tuple[list[str], float | None]:
    """Every layer whose regression at ``stage`` has ``signature`` (members of a pooled finding each), and their summed
    change per iteration (None when none is timed); no layers when fewer than two share it, or at the graph stage,
    where each layer's change (added, removed, changed) is its own."""
    if signature is None or stage == "graph":
        return [], None
    same = [f for f in result.stage(stage).layers if f.regression and finding_signature(f) == signature]
    layers = list(dict.fromkeys(name for f in same for name in (f.members or [f.layer])))
    timed = [f.delta_ms for f in same if f.delta_ms is not None]
    if len(layers) < 2:
        return [], None
    return layers, round(sum(timed), 6) if timed else None


def _ddmin_changes(prober: _Prober, phase: Phase, good: Workload, bad: Workload, changes: list[Change], stage: str, kind: str | None) -> list[Change]:
    by_key = {change.key: change for change in changes}
    search: DDMin[str] = DDMin([change.key for change in changes])
    while not search.done:
        subset = search.pending
        if prober.exhausted:
            break
        label = ", ".join(by_key[k].key for k in subset) if len(subset) <= 3 else f"{len(subset)} changes"
        try:
            variant = apply_changes(good, bad, subset)
        except UserError as exc:
            prober._record(phase, label, Outcome.UNRESOLVED, "static", False, None, None, invalid=str(exc).splitlines()[0])
            search.report(Outcome.UNRESOLVED)
            continue
        search.report(prober.probe(phase, label, good, variant, stage, kind))
    return [by_key[key] for key in search.result]


def _ddmin_keep(prober: _Prober, phase: Phase, base: Workload, cand: Workload, units: dict[str, list[str]], always: set[str], stage: str, kind: str | None) -> tuple[Workload, Workload]:
    """Keep the fewest ``units`` (groups of layer names) for which the shrunk pair still reproduces."""
    names = list(units)
    if len(names) < 2:
        return base, cand
    search: DDMin[str] = DDMin(names)
    best = (base, cand)
    while not search.done:
        if prober.exhausted:
            break
        subset = search.pending
        keep = set(always)
        for unit in subset:
            keep.update(units[unit])
        label = f"keep {', '.join(subset) if len(subset) <= 3 else f'{len(subset)} of {len(names)}'}"
        try:
            shrunk = (keep_layers(base, keep & {layer.name for layer in base.layers}), keep_layers(cand, keep))
        except UserError as exc:
            prober._record(phase, label, Outcome.UNRESOLVED, "static", False, None, None, invalid=str(exc).splitlines()[0])
            search.report(Outcome.UNRESOLVED)
            continue
        outcome = prober.probe(phase, label, shrunk[0], shrunk[1], stage, kind)
        if outcome is Outcome.FAIL and len(shrunk[1].layers) < len(best[1].layers):
            best = shrunk
        search.report(outcome)
    return best


def _halve(prober: _Prober, phase: Phase, pair: tuple[Workload, Workload], step: Callable[[Workload], Workload], stage: str, kind: str | None, describe: Callable[[Workload], str]) -> tuple[Workload, Workload]:
    while not prober.exhausted:
        try:
            smaller = (step(pair[0]), step(pair[1]))
        except UserError as exc:
            prober.say("reduce.stop_shrinking", phase=phase, error=str(exc).splitlines()[0])
            break
        if prober.probe(phase, describe(smaller[1]), smaller[0], smaller[1], stage, kind) is not Outcome.FAIL:
            break
        pair = smaller
    return pair


# --------------------------------------------------------------------------- entry point


def _initial_divergence(
    prober: _Prober, good: Workload, bad: Workload, dirs: tuple[Path | None, Path | None], probe_repeats: int
) -> tuple[BisectResult, bool]:
    """Step 1: the divergence to reduce, static first (graph/lower need no timing), then timed twice; with
    whether the pair diverges (False: the last bisect of a pair that did not)."""
    good_dir, bad_dir = dirs
    prober.say("reduce.check_static")
    static = prober.bisect(prober.static_run(good, good_dir), prober.static_run(bad, bad_dir))
    if static is not None and static.first_stage in _CATEGORICAL:
        return static, True
    prober.say("reduce.check_timed")
    for attempt in range(2):
        repeats = probe_repeats * (attempt + 1)
        result = prober.bisect(prober.timed_run(good, good_dir, repeats), prober.timed_run(bad, bad_dir, repeats))
        if result.state == "divergence":
            return result, True
        if attempt == 0:
            prober.flaky += 1
    return result, False


def _shrink_graph(prober: _Prober, base: Workload, repro: Workload, stage: str, kind: str | None) -> tuple[Workload, Workload]:
    """Step 4: shrink the pair (base, repro) identically: blocks, then layers, tokens and widths.

    A model workload's graph is its checkpoint's: only its tokens are halved.
    """
    tokens_text: Callable[[Workload], str] = lambda w: f"tokens {w.tokens.batch}x{w.tokens.sequence}"  # noqa: E731
    source = graph_source(repro)
    if not source.shrinkable:
        prober.say("reduce.tokens_only", source=source.label)
        return _halve(prober, "tokens", (base, repro), half_tokens, stage, kind, tokens_text)
    blocks: dict[str, list[str]] = {}
    for layer in repro.layers:
        block = block_of(layer.name)
        if block is not None:
            blocks.setdefault(block, []).append(layer.name)
    outside = {layer.name for layer in repro.layers if block_of(layer.name) is None}
    base, repro = _ddmin_keep(prober, "blocks", base, repro, blocks, outside, stage, kind)
    units = {layer.name: [layer.name] for layer in repro.layers}
    base, repro = _ddmin_keep(prober, "layers", base, repro, units, set(), stage, kind)
    base, repro = _halve(prober, "tokens", (base, repro), half_tokens, stage, kind, tokens_text)
    return _halve(
        prober, "widths", (base, repro), lambda w: scale_keeping_treatment(w, 2), stage, kind,
        lambda w: "widths " + ", ".join(f"{layer.name}={layer.shape}" for layer in w.layers[:3]),
    )


@dataclass(frozen=True)
class Reduction:
    """What a reduction gives: its record, and (when confirmed) the baseline and reproducer workloads to write."""

    record: ReduceResult
    base: Workload | None = None
    repro: Workload | None = None


def reduce_workloads(
    good: Workload,
    bad: Workload,
    *,
    probe_repeats: int = DEFAULT_PROBE_REPEATS,
    max_probes: int = DEFAULT_MAX_PROBES,
    progress: Progress | None = None,
    good_dir: Path | None = None,
    bad_dir: Path | None = None,
    repro_path: Path = Path("repro.yaml"),
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> Reduction:
    """Reduce the difference between ``good`` and ``bad`` to the smallest reproducer of its first divergence.

    ``good_dir``/``bad_dir`` are the folders the workloads came from (relative
    weight paths resolve there). ``repro_path`` only shapes the reproducing
    command (the baseline is written beside it as ``<stem>.base.yaml``).
    Returns the record (kept changes, probe log and counts, the confirming bisect
    and the one command that reproduces it) with the reproducer and its baseline
    workloads, which the caller writes to the files the record names.
    """
    if probe_repeats < 3:
        raise UserError(f"probe_repeats={probe_repeats}: need at least 3")
    good = absolute_paths(good, good_dir)
    bad = absolute_paths(bad, bad_dir)
    for workload in (good, bad):
        graph_source(workload).check_cost(probe_repeats * 2, None, timed=True)  # the largest probe: re-measured with twice the repeats
    prober = _Prober(probe_repeats, max_probes, progress, (good_dir, bad_dir), alpha, min_effect)
    changes = diff_workloads(good, bad)
    common: dict[str, Any] = dict(
        good=good.name, bad=bad.name, changes=changes, layers_before=graph_source(bad, bad_dir).layer_count(), tokens_before=bad.tokens.total
    )
    if not changes:
        return Reduction(ReduceResult(
            **common, reproduced=False, target_stage=None, target_finding=None, kept=[], replays=0, static_probes=0, flaky_probes=0,
            probes=[], outcome="nothing_to_reduce", probe_repeats=probe_repeats, max_probes=max_probes,
        ))

    initial, diverges = _initial_divergence(prober, good, bad, (good_dir, bad_dir), probe_repeats)
    if not diverges:
        return Reduction(ReduceResult(
            **common, reproduced=False, target_stage=None, target_finding=None, kept=[], probe_count=len(prober.log), replays=prober.replays,
            static_probes=prober.static, flaky_probes=prober.flaky, probes=prober.log, outcome="not_reproduced", not_reproduced=initial,
            probe_repeats=probe_repeats, max_probes=max_probes,
        ))
    if initial.first_stage is None:
        raise AssertionError("a divergence without a first stage")
    stage = initial.first_stage
    kind, other_kinds = _target(initial)
    target = stage + (f" ({kind})" if kind else "")
    prober.say("reduce.target", stage=stage, finding=kind, changes=len(changes))

    # 2-3. ddmin over the changes, then the other causes of the same stage.
    kept = _ddmin_changes(prober, "changes", good, bad, changes, stage, kind)
    causes = []
    for other in other_kinds:
        if prober.exhausted:
            break
        causes.append(Cause(finding=other, kept=_ddmin_changes(prober, "causes", good, bad, changes, stage, other)))

    unshrunk = (good, apply_changes(good, bad, [change.key for change in kept]))
    chosen, confirmation, confirmed = _confirm(prober, pairs := [_shrink_graph(prober, *unshrunk, stage, kind), unshrunk], stage, kind, probe_repeats)
    base, repro = pairs[chosen]
    targets, targets_ms = _cause_set(initial, stage, kind)
    order = {lo.name: i for i, lo in enumerate(prober.static_run(bad, bad_dir).lower.layers)}  # the bad graph's order
    targets.sort(key=lambda name: order.get(name, len(order)))
    base, repro = _named(base, repro, good.name, bad.name, target, targets)
    base_path = repro_path.with_name(f"{repro_path.stem}.base{repro_path.suffix or '.yaml'}")
    command = f"sparsedebug bisect {base_path} {repro_path}"
    layers_after = graph_source(repro, bad_dir).layer_count()
    record = ReduceResult(
        **common, reproduced=True, confirmed=confirmed, target_stage=stage, target_finding=kind, kept=kept, other_causes=causes,
        repro_file=str(repro_path) if confirmed else None, base_file=str(base_path) if confirmed else None,
        layers_after=layers_after, tokens_after=repro.tokens.total,
        probe_count=len(prober.log), replays=prober.replays, static_probes=prober.static, flaky_probes=prober.flaky,
        probes=prober.log, confirmation=confirmation, command=command if confirmed else None, outcome="reduced",
        probe_repeats=probe_repeats, graph_source=None if graph_source(bad).shrinkable else graph_source(bad).label,
        full_graph=confirmed and chosen > 0, max_probes=max_probes, stopped_at_limit=prober.exhausted, targets=targets, targets_ms=targets_ms)
    return Reduction(record, base if confirmed else None, repro if confirmed else None)


def _named(base: Workload, repro: Workload, good: str, bad: str, target: str, targets: list[str]) -> tuple[Workload, Workload]:
    """The reproducer and its baseline named after the pair they were reduced from, the reproducer saying the layer set it stands for."""
    stands = f"; it stands for all {len(targets)} layers sharing that cause: {', '.join(targets)}" if targets else ""
    repro = repro.model_copy(update={"name": f"{bad}-repro", "description": f"Reproducer of {target} reduced from {good} -> {bad}{stands}"})
    base = base.model_copy(update={"name": f"{good}-repro-base", "description": f"Baseline for {repro.name}"})
    return base, repro


def _confirm(
    prober: _Prober, pairs: list[tuple[Workload, Workload]], stage: str, kind: str | None, repeats: int
) -> tuple[int, BisectResult, bool]:
    """Step 5: the index of the first (base, repro) pair whose timed bisect shows the same first stage and finding kind.

    Tried in order (the shrunk pair, then the pair before shrinking, unless they are
    the same); when none does, index 0 with its bisect and ``False``: nothing is
    written then.
    """
    results: list[BisectResult] = []
    for index, (base, repro) in enumerate(pairs):
        if index > 0 and (base, repro) == pairs[0]:
            break
        prober.say("reduce.confirm")
        result = prober.bisect(prober.timed_run(base, prober.dirs[0], repeats), prober.timed_run(repro, prober.dirs[1], repeats))
        if _classify(result, stage, kind)[0] is Outcome.FAIL:
            return index, result, True
        results.append(result)
    return 0, results[0], False
