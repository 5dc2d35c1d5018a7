"""Step 4 of the playbook: reduce a good/bad workload pair to one focused reproducer.

``reduce_workloads(good, bad)``:

1. **Target.** Bisects the pair once to learn what to reproduce: the first
   divergent stage and, for the categorical stages (graph, lower), the kind of
   finding (a fallback, a per-call conversion, ...). Graph and lower are
   decided by a *static probe* (weights, pruning and the backend profile's
   lowering decisions, no timing: ``sparsedebug.sources.replay.replay.prepare``); only when
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

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from sparsedebug.core.errors import UserError
from sparsedebug.locate.common import finding_signature
from sparsedebug.locate.walk import bisect_runs
from sparsedebug.records.findings import BisectResult
from sparsedebug.records.run import (
    STAGES,
    KernelStage,
    OutcomeStage,
    RunRecord,
    RunSource,
    ScheduleStage,
)
from sparsedebug.reduce.search import DDMin, Outcome
from sparsedebug.sources.replay.workload import MODEL_INPUT, Layer, Workload, resolved_inputs, revalidate

DEFAULT_PROBE_REPEATS = 5
"""Timed repetitions of one probe replay (re-measured with twice as many when undecided)."""

DEFAULT_MAX_PROBES = 80
"""Upper bound on probes (static and timed together); the search stops early, keeping the best so far, when reached."""

KNOB_FIELDS: tuple[str, ...] = (
    "seed",
    "tokens",
    "input_features",
    "backend",
    "conversion",
    "precision",
    "threads",
    "pruning",
    "weights",
    "calibration",
)
"""Workload fields that are knobs (repeats, warmup, budget, name and description are not: they change no measurement)."""

_KIND_PRIORITY = ("removed", "added", "changed", "fallback", "path_changed", "new_kernel_class", "per_call_conversion")
_CATEGORICAL = ("graph", "lower")

Phase = Literal["check", "changes", "causes", "blocks", "layers", "tokens", "widths", "confirm"]


class Change(BaseModel):
    """One difference between the good and the bad workload."""

    key: str = Field(description="'knob:NAME' or 'layer:NAME'.")
    kind: Literal["knob", "layer"]
    name: str
    detail: str


class ProbeLog(BaseModel):
    """One probe: what was tried and what it showed."""

    phase: Phase
    description: str
    outcome: Literal["fail", "pass", "unresolved"]
    mode: Literal["static", "timed"]
    flaky: bool = False
    note: str = ""


class Cause(BaseModel):
    """An independent cause (another finding of the target stage), reduced on its own."""

    finding: str
    kept: list[Change]


class ReduceResult(BaseModel):
    """The focused reproducer and how it was found."""

    good: str
    bad: str
    reproduced: bool = Field(description="Whether the bad workload diverged from the good one at all.")
    target_stage: str | None
    target_finding: str | None = Field(
        description="The finding reproduced: 'fallback:<reason>', 'per_call_conversion', 'slower:<layer role>', ... (None: the stage as a whole)."
    )
    changes: list[Change]
    kept: list[Change]
    other_causes: list[Cause] = Field(default_factory=list)
    repro: Workload | None = None
    base: Workload | None = None
    layers_before: int
    layers_after: int | None = None
    tokens_before: int
    tokens_after: int | None = None
    probe_count: int = Field(0, description="Probes run: each compares one variant pair (static or timed).")
    replays: int = Field(description="Timed replays run (full five stages).")
    static_probes: int = Field(description="Static runs (graph and lowering only, no timing); repeated variants come from a cache.")
    flaky_probes: int
    probes: list[ProbeLog]
    confirmation: BisectResult | None = None
    command: str | None = None
    verdict: str


Progress = Callable[[str], None]


# --------------------------------------------------------------------------- changes


def _layer_detail(good: Layer, bad: Layer) -> str:
    g = good.model_dump(exclude_none=True)
    b = bad.model_dump(exclude_none=True)
    parts = []
    for key in dict.fromkeys([*g, *b]):
        if g.get(key) != b.get(key):
            parts.append(f"{key} {g.get(key, '-')} -> {b.get(key, '-')}")
    return "; ".join(parts)


def _knob_text(value: Any) -> str:
    if isinstance(value, BaseModel):
        return str(value.model_dump(exclude_none=True))
    return "-" if value is None else str(value)


def diff_workloads(good: Workload, bad: Workload) -> list[Change]:
    """Every knob and layer that differs between ``good`` and ``bad``, knobs first, layers in graph order."""
    changes: list[Change] = []
    for knob in KNOB_FIELDS:
        g, b = getattr(good, knob), getattr(bad, knob)
        if g != b:
            changes.append(Change(key=f"knob:{knob}", kind="knob", name=knob, detail=f"{knob}: {_knob_text(g)} -> {_knob_text(b)}"))
    good_layers = {layer.name: layer for layer in good.layers}
    bad_layers = {layer.name: layer for layer in bad.layers}
    for index, layer in enumerate(bad.layers):
        old = good_layers.get(layer.name)
        if old is None:
            changes.append(Change(key=f"layer:{layer.name}", kind="layer", name=layer.name, detail=f"added ({layer.op})"))
        elif not _same_layer(good, old, bad, layer, index):
            changes.append(Change(key=f"layer:{layer.name}", kind="layer", name=layer.name, detail=_layer_detail(old, layer)))
    for layer in good.layers:
        if layer.name not in bad_layers:
            changes.append(Change(key=f"layer:{layer.name}", kind="layer", name=layer.name, detail=f"removed ({layer.op})"))
    return changes


def _same_layer(good: Workload, old: Layer, bad: Workload, new: Layer, index: int) -> bool:
    """Equal layers; inputs compared as written unless one side names them (then resolved)."""
    if old.inputs is None and new.inputs is None:
        return old == new
    return _explicit(good, old) == _explicit(bad, new, index)


def _explicit(workload: Workload, layer: Layer, index: int | None = None) -> Layer:
    """The layer with its inputs written out, so 'previous layer' and an explicit name compare equal."""
    position = index if index is not None else workload.layers.index(layer)
    return layer.model_copy(update={"inputs": resolved_inputs(workload, position)})


def apply_changes(good: Workload, bad: Workload, keys: Sequence[str]) -> Workload:
    """``good`` with the changes named by ``keys`` taken from ``bad``; ``UserError`` if the result is invalid."""
    selected = set(keys)
    update: dict[str, Any] = {}
    for knob in KNOB_FIELDS:
        if f"knob:{knob}" in selected:
            update[knob] = getattr(bad, knob)
    bad_layers = {layer.name: layer for layer in bad.layers}
    good_names = {layer.name for layer in good.layers}
    layers: list[Layer] = []
    for layer in good.layers:
        key = f"layer:{layer.name}"
        if key in selected and layer.name not in bad_layers:
            continue  # removed in bad
        layers.append(bad_layers[layer.name] if key in selected else layer)
    for index, layer in enumerate(bad.layers):
        if layer.name in good_names or f"layer:{layer.name}" not in selected:
            continue
        previous = {item.name for item in bad.layers[:index]}
        position = 0
        for i, item in enumerate(layers):
            if item.name in previous:
                position = i + 1
        layers.insert(position, bad_layers[layer.name])
    update["layers"] = layers
    update["name"] = bad.name if selected else good.name
    variant = good.model_copy(update=update)
    return revalidate(variant)


# --------------------------------------------------------------------------- graph shrinking


def _block_of(name: str) -> str | None:
    match = re.match(r"^(.*?\.\d+)\.", name)
    return match.group(1) if match else None


def keep_layers(workload: Workload, keep: set[str]) -> Workload:
    """``workload`` with only the layers in ``keep``; a consumer of a dropped layer reads that layer's first input.

    The model input width follows the first kept layer that reads it.
    ``UserError`` when the result is not a valid graph.
    """
    explicit = [_explicit(workload, layer, i) for i, layer in enumerate(workload.layers)]
    first_input = {layer.name: (layer.inputs or [MODEL_INPUT])[0] for layer in explicit}

    def resolve(name: str) -> str:
        seen = set()
        while name != MODEL_INPUT and name not in keep:
            if name in seen:
                break
            seen.add(name)
            name = first_input.get(name, MODEL_INPUT)
        return name

    layers = []
    for layer in explicit:
        if layer.name not in keep:
            continue
        inputs = list(dict.fromkeys(resolve(name) for name in layer.inputs or [MODEL_INPUT]))
        layers.append(layer.model_copy(update={"inputs": inputs}))
    if not layers:
        raise UserError("no layers left")
    update: dict[str, Any] = {"layers": layers}
    for layer in layers:
        if layer.inputs == [MODEL_INPUT] and layer.shape is not None and layer.op != "embedding":
            update["input_features"] = layer.shape[1] if layer.op == "linear" else layer.shape[0]
            break
    return revalidate(workload.model_copy(update=update))


def scale_widths(workload: Workload, factor: int, *, floor: int = 8) -> Workload:
    """Every layer dimension and the input width divided by ``factor``.

    ``UserError`` if a width is not divisible, would drop below ``floor``, or the result is invalid.
    """
    def div(value: int) -> int:
        if value % factor or value // factor < floor:
            raise UserError(f"width {value} cannot be divided by {factor} (floor {floor})")
        return value // factor

    layers = [
        layer.model_copy(update={"shape": [div(d) for d in layer.shape]}) if layer.shape is not None and layer.op != "embedding" else layer
        for layer in workload.layers
    ]
    update: dict[str, Any] = {"layers": layers}
    if workload.input_features is not None:
        update["input_features"] = div(workload.input_features)
    return revalidate(workload.model_copy(update=update))


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

    def say(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)

    def static_run(self, workload: Workload, base_dir: Path | None) -> RunRecord:
        from sparsedebug.sources.replay.replay import lower_stage, prepare

        key = workload.model_dump_json()
        cached = self._static_cache.get(key)
        if cached is not None:
            return cached
        self.static += 1
        prepared = prepare(workload, base_dir)
        record = RunRecord(
            name=workload.name,
            source=RunSource(kind="replay"),
            graph=prepared.graph,
            lower=lower_stage(workload, prepared),
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
            outcome, note = _classify(result, stage, kind)
            self._record(phase, description, outcome, "static", False, note)
            return outcome
        repeats = self.probe_repeats
        flaky = False
        for attempt in range(2):
            result = self.bisect(self.timed_run(base, self.dirs[0], repeats), self.timed_run(cand, self.dirs[1], repeats))
            outcome, note = _classify(result, stage, kind)
            if note != "uncertain":
                break
            flaky = True
            repeats *= 2
            if attempt == 1:
                outcome, note = Outcome.UNRESOLVED, "still undecided with twice the repeats"
        if flaky:
            self.flaky += 1
        self._record(phase, description, outcome, "timed", flaky, note)
        return outcome

    def _record(self, phase: Phase, description: str, outcome: Outcome, mode: Literal["static", "timed"], flaky: bool, note: str) -> None:
        self.log.append(ProbeLog(phase=phase, description=description, outcome=outcome.value, mode=mode, flaky=flaky, note=note))
        self.say(f"probe {len(self.log)} [{phase}] {description}: {outcome.value}{' (re-measured)' if flaky else ''}")


def _classify(result: BisectResult, stage: str, signature: str | None) -> tuple[Outcome, str]:
    """FAIL when the first divergence is ``stage`` with a finding of ``signature``; UNRESOLVED when an earlier stage diverges."""
    index = STAGES.index(stage)
    if result.first_stage is not None and STAGES.index(result.first_stage) < index:
        return Outcome.UNRESOLVED, f"diverges earlier, at {result.first_stage}"
    finding = result.stage(stage)
    if result.first_stage == stage:
        if signature is None or any(f.regression and finding_signature(f) == signature for f in finding.layers):
            return Outcome.FAIL, ""
        return Outcome.PASS, "diverges, but with another finding"
    if finding.status == "undecided" or (result.state == "undecided" and result.first_stage is None):
        return Outcome.UNRESOLVED, "uncertain"
    head = finding.headline
    if head is not None and head.comparison.significant and not head.comparison.persistent:
        return Outcome.UNRESOLVED, "uncertain"
    return Outcome.PASS, ""


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
            prober._record(phase, label, Outcome.UNRESOLVED, "static", False, f"invalid variant: {str(exc).splitlines()[0]}")
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
            prober._record(phase, label, Outcome.UNRESOLVED, "static", False, f"invalid graph: {str(exc).splitlines()[0]}")
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
        except UserError:
            break
        if prober.probe(phase, describe(smaller[1]), smaller[0], smaller[1], stage, kind) is not Outcome.FAIL:
            break
        pair = smaller
    return pair


def _half_tokens(workload: Workload) -> Workload:
    tokens = workload.tokens
    if tokens.batch > 1:
        new = tokens.model_copy(update={"batch": tokens.batch // 2})
    elif tokens.sequence >= 16:
        new = tokens.model_copy(update={"sequence": tokens.sequence // 2})
    else:
        raise UserError("tokens already minimal")
    return revalidate(workload.model_copy(update={"tokens": new}))


def _absolute_paths(workload: Workload, base_dir: Path | None) -> Workload:
    """Weights and calibration paths made absolute so the reproducer stands alone anywhere."""
    if base_dir is None:
        return workload
    update: dict[str, Any] = {}
    for field in ("weights", "calibration"):
        spec = getattr(workload, field)
        if spec is not None and not Path(spec.path).is_absolute():
            update[field] = spec.model_copy(update={"path": str((base_dir / spec.path).resolve())})
    return workload.model_copy(update=update) if update else workload


# --------------------------------------------------------------------------- entry point


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
    alpha: float = 0.05,
    min_effect: float = 1.10,
) -> ReduceResult:
    """Reduce the difference between ``good`` and ``bad`` to the smallest reproducer of its first divergence.

    ``good_dir``/``bad_dir`` are the folders the workloads came from (relative
    weight paths resolve there). ``repro_path`` only shapes the reproducing
    command (the baseline is written beside it as ``<stem>.base.yaml``).
    Returns the kept changes, the reproducer and its baseline, the probe log and
    counts, the confirming bisect and the one command that reproduces it.
    """
    if probe_repeats < 3:
        raise UserError(f"probe_repeats={probe_repeats}: need at least 3")
    good = _absolute_paths(good, good_dir)
    bad = _absolute_paths(bad, bad_dir)
    prober = _Prober(probe_repeats, max_probes, progress, (good_dir, bad_dir), alpha, min_effect)
    changes = diff_workloads(good, bad)
    common: dict[str, Any] = dict(
        good=good.name, bad=bad.name, changes=changes, layers_before=len(bad.layers), tokens_before=bad.tokens.total
    )
    if not changes:
        return ReduceResult(
            **common, reproduced=False, target_stage=None, target_finding=None, kept=[], replays=0, static_probes=0, flaky_probes=0,
            probes=[], verdict="nothing to reduce: the two workloads have no knob or layer difference",
        )

    # 1. target: static first (graph/lower need no timing), then timed.
    prober.say("checking the divergence (static: graph and lowering)")
    initial: BisectResult | None = prober.bisect(prober.static_run(good, good_dir), prober.static_run(bad, bad_dir))
    if initial is None or initial.first_stage not in _CATEGORICAL:
        prober.say("no graph/lowering divergence; replaying both with timing")
        initial = None
        for attempt in range(2):
            repeats = probe_repeats * (attempt + 1)
            result = prober.bisect(prober.timed_run(good, good_dir, repeats), prober.timed_run(bad, bad_dir, repeats))
            if result.state == "divergence":
                initial = result
                break
            if attempt == 0:
                prober.flaky += 1
        if initial is None:
            return ReduceResult(
                **common, reproduced=False, target_stage=None, target_finding=None, kept=[], probe_count=len(prober.log), replays=prober.replays,
                static_probes=prober.static, flaky_probes=prober.flaky, probes=prober.log,
                verdict=(
                    f"cannot reproduce a regression: {bad.name} does not diverge from {good.name} "
                    f"(measured twice, {probe_repeats} and {2 * probe_repeats} repeats): {result.verdict}"
                ),
            )
    if initial.first_stage is None:
        raise AssertionError("a divergence without a first stage")
    stage = initial.first_stage
    kind, other_kinds = _target(initial)
    target = stage + (f" ({kind})" if kind else "")
    prober.say(f"target: first divergence at {target}; {len(changes)} change(s) to reduce")

    # 2-3. ddmin over the changes, then the other causes of the same stage.
    kept = _ddmin_changes(prober, "changes", good, bad, changes, stage, kind)
    causes = []
    for other in other_kinds:
        if prober.exhausted:
            break
        causes.append(Cause(finding=other, kept=_ddmin_changes(prober, "causes", good, bad, changes, stage, other)))

    # 4. shrink the graph of the pair (base, repro) identically.
    base = good
    repro = apply_changes(good, bad, [change.key for change in kept])
    blocks: dict[str, list[str]] = {}
    for layer in repro.layers:
        block = _block_of(layer.name)
        if block is not None:
            blocks.setdefault(block, []).append(layer.name)
    outside = {layer.name for layer in repro.layers if _block_of(layer.name) is None}
    base, repro = _ddmin_keep(prober, "blocks", base, repro, blocks, outside, stage, kind)
    units = {layer.name: [layer.name] for layer in repro.layers}
    base, repro = _ddmin_keep(prober, "layers", base, repro, units, set(), stage, kind)
    base, repro = _halve(prober, "tokens", (base, repro), _half_tokens, stage, kind, lambda w: f"tokens {w.tokens.batch}x{w.tokens.sequence}")
    base, repro = _halve(
        prober, "widths", (base, repro), lambda w: scale_widths(w, 2), stage, kind,
        lambda w: "widths " + ", ".join(f"{layer.name}={layer.shape}" for layer in w.layers[:3]),
    )
    repro = repro.model_copy(update={"name": f"{bad.name}-repro", "description": f"Reproducer of {target} reduced from {good.name} -> {bad.name}"})
    base = base.model_copy(update={"name": f"{good.name}-repro-base", "description": f"Baseline for {repro.name}"})

    # 5. confirm with timing.
    prober.say("confirming with a timed replay of the reproducer and its baseline")
    confirmation = prober.bisect(prober.timed_run(base, good_dir, probe_repeats), prober.timed_run(repro, bad_dir, probe_repeats))
    confirmed = confirmation.first_stage == stage
    base_path = repro_path.with_name(f"{repro_path.stem}.base{repro_path.suffix or '.yaml'}")
    command = f"sparsedebug bisect {base_path} {repro_path}"
    kept_text = ", ".join(change.detail if change.kind == "knob" else f"{change.name} ({change.detail})" for change in kept)
    verdict = (
        f"{len(kept)} of {len(changes)} change(s) reproduce the {target} divergence: {kept_text}; "
        f"graph {len(bad.layers)} -> {len(repro.layers)} layers, tokens {bad.tokens.total} -> {repro.tokens.total}; "
        f"{len(prober.log)} probe(s): {prober.static} static graph+lowering run(s), {prober.replays} timed replay(s)"
    )
    if not confirmed:
        verdict += f"; the timed confirmation bisected to {confirmation.first_stage or confirmation.state} instead"
    if causes:
        verdict += "; other cause(s): " + "; ".join(f"{c.finding}: {', '.join(k.key for k in c.kept)}" for c in causes)
    if prober.exhausted:
        verdict += f" (stopped at the {max_probes}-probe limit)"
    return ReduceResult(
        **common,
        reproduced=True,
        target_stage=stage,
        target_finding=kind,
        kept=kept,
        other_causes=causes,
        repro=repro,
        base=base,
        layers_after=len(repro.layers),
        tokens_after=repro.tokens.total,
        probe_count=len(prober.log),
        replays=prober.replays,
        static_probes=prober.static,
        flaky_probes=prober.flaky,
        probes=prober.log,
        confirmation=confirmation,
        command=command,
        verdict=verdict,
    )
