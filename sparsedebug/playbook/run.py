"""The debug playbook as data: load and validate ``playbooks/*.yaml``.

The playbook is the five-step walk (freeze, locate, classify, reproduce, re-run),
its primary metric, the metrics to collect, the debug branches, the pitfalls, the
owners who sign, and the final decisions a memo may take. ``load_playbook`` turns
the YAML into the pydantic models below and refuses anything inconsistent
(unknown owner, missing decision, steps out of order) with ``FILE: field: message``.

The walk itself (``sparsedebug playbook run``) is :func:`run_playbook` below.
"""

from __future__ import annotations

import datetime
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import load_data, validate
from sparsedebug.core.resources import data_dirs
from sparsedebug.records.run import STAGES, KernelPath, RunRecord

if TYPE_CHECKING:
    from sparsedebug.playbook.bundle import LoadedBundle
    from sparsedebug.records.classification import Fix
    from sparsedebug.sources.replay.workload import Workload

PLAYBOOK_SCHEMA_VERSION = 1
DEFAULT_PLAYBOOK = "structured-sparsity.yaml"

MECHANISMS: tuple[str, ...] = ("compute", "memory", "scheduling", "precision", "thermal")
"""The five mechanism classes, in the order the playbook lists them."""

DECISIONS: tuple[str, ...] = ("ship", "bounded_rollout", "rollback", "escalate")
"""The final decisions a review memo can take."""

EvidenceKind = Literal["fallback_evidence", "quality_evidence", "speedup", "quality_holds"]
"""What a decision can require of the bundle before the memo may take it."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MetricComponent(_Model):
    """One measurable part of the primary metric and where it sits in a run record."""

    id: str
    label: str
    unit: str
    record_field: str
    better: Literal["higher", "lower"]


class PrimaryMetric(_Model):
    name: str
    components: list[MetricComponent] = Field(min_length=1)


class ConceptStage(_Model):
    stage: str
    label: str


class Concept(_Model):
    title: str
    stages: list[ConceptStage]

    @model_validator(mode="after")
    def _stages_in_order(self) -> Concept:
        names = tuple(s.stage for s in self.stages)
        if names != STAGES:
            raise ValueError(f"stages must be {', '.join(STAGES)} in that order, got {', '.join(names)}")
        return self


class Step(_Model):
    """One step of the walk with what it consumes and produces."""

    number: int
    id: str
    title: str
    command: str
    inputs: list[str]
    outputs: list[str]
    done_when: str


class Mechanism(_Model):
    id: str
    summary: str


class MetricToCollect(_Model):
    id: str
    label: str
    source: str
    record_field: str


class Branch(_Model):
    """A debug branch: the question, the evidence that answers it, and its owner."""

    id: str
    title: str
    question: str
    evidence: str
    owner: str
    mechanisms: list[str] = Field(min_length=1)


class Pitfall(_Model):
    id: str
    text: str
    guard: str


class Owner(_Model):
    id: str
    title: str
    accountable_for: str


class Decision(_Model):
    id: str
    label: str
    when: str
    requires: list[EvidenceKind]


class MemoTemplate(_Model):
    title: str
    sections: list[str]
    regression_risks: list[str] = Field(min_length=1)
    required_artifact: str
    required_owners: list[str] = Field(min_length=1)


class Playbook(_Model):
    """The whole playbook, validated for internal consistency."""

    schema_version: int = PLAYBOOK_SCHEMA_VERSION
    kind: Literal["playbook"] = "playbook"
    id: str
    title: str
    area: str
    summary: str
    review_question: str
    primary_metric: PrimaryMetric
    concept: Concept
    steps: list[Step] = Field(min_length=1)
    mechanisms: list[Mechanism]
    metrics: list[MetricToCollect] = Field(min_length=1)
    branches: list[Branch] = Field(min_length=1)
    pitfalls: list[Pitfall] = Field(min_length=1)
    owners: list[Owner] = Field(min_length=1)
    decisions: list[Decision]
    memo: MemoTemplate
    takeaways: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> Playbook:
        numbers = [s.number for s in self.steps]
        if numbers != list(range(1, len(numbers) + 1)):
            raise ValueError(f"steps must be numbered 1..{len(numbers)} in order, got {numbers}")
        for label, ids in (
            ("steps", [s.id for s in self.steps]),
            ("owners", [o.id for o in self.owners]),
            ("branches", [b.id for b in self.branches]),
            ("metrics", [m.id for m in self.metrics]),
            ("pitfalls", [p.id for p in self.pitfalls]),
            ("decisions", [d.id for d in self.decisions]),
        ):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            if dupes:
                raise ValueError(f"{label}: duplicate id {', '.join(dupes)}")
        mech = tuple(m.id for m in self.mechanisms)
        if mech != MECHANISMS:
            raise ValueError(f"mechanisms must be {', '.join(MECHANISMS)} in that order, got {', '.join(mech)}")
        decisions = tuple(d.id for d in self.decisions)
        if decisions != DECISIONS:
            raise ValueError(f"decisions must be {', '.join(DECISIONS)} in that order, got {', '.join(decisions)}")
        owner_ids = {o.id for o in self.owners}
        for branch in self.branches:
            if branch.owner not in owner_ids:
                raise ValueError(f"branch {branch.id}: owner {branch.owner!r} is not one of the owners")
            unknown = [m for m in branch.mechanisms if m not in MECHANISMS]
            if unknown:
                raise ValueError(f"branch {branch.id}: unknown mechanism {', '.join(unknown)}")
        for owner in self.memo.required_owners:
            if owner not in owner_ids:
                raise ValueError(f"memo.required_owners: {owner!r} is not one of the owners")
        ship = self.decision("ship")
        missing = {"fallback_evidence", "quality_evidence"} - set(ship.requires)
        if missing:
            raise ValueError(f"decision ship must require {', '.join(sorted(missing))}")
        return self

    def decision(self, decision_id: str) -> Decision:
        """The decision with this id (the validator guarantees all four exist)."""
        for decision in self.decisions:
            if decision.id == decision_id:
                return decision
        raise KeyError(decision_id)

    def owner(self, owner_id: str) -> Owner:
        """The owner with this id."""
        for owner in self.owners:
            if owner.id == owner_id:
                return owner
        raise KeyError(owner_id)

    def step(self, step_id: str) -> Step:
        """The step with this id."""
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)


def default_playbook_path() -> Path:
    """The embedded structured-sparsity playbook (installed wheel or source checkout)."""
    for directory in data_dirs("playbooks"):
        candidate = directory / DEFAULT_PLAYBOOK
        if candidate.is_file():
            return candidate
    searched = ", ".join(str(d) for d in data_dirs("playbooks"))
    raise UserError(f"embedded playbook {DEFAULT_PLAYBOOK} not found (searched {searched}); reinstall sparsedebug")


def load_playbook(path: Path | None = None) -> Playbook:
    """Load and validate a playbook YAML; ``None`` loads the embedded default."""
    source = default_playbook_path() if path is None else path
    return validate(Playbook, load_data(source), str(source))


# --------------------------------------------------------------------------- the walk


class Reporter(Protocol):
    """How the walk tells a person where it is (the CLI draws rich progress on stderr)."""

    def step(self, step: Step, text: str) -> None:
        """A step starts."""

    def progress(self, stage: str, done: int, total: int) -> None:
        """Replay progress inside the current step."""

    def done(self, step: Step, status: str, detail: str) -> None:
        """A step ended (``done`` or ``skipped``)."""


class _QuietReporter:
    def step(self, step: Step, text: str) -> None:
        return None

    def progress(self, stage: str, done: int, total: int) -> None:
        return None

    def done(self, step: Step, status: str, detail: str) -> None:
        return None


DEFAULT_BASELINE = "llama_dense"
DEFAULT_CANDIDATE = "llama_2of4_regressed"


def apply_fix(workload: Workload, fix: Fix) -> tuple[Workload | None, str]:
    """Apply a classification's fix to a copy of ``workload``; ``None`` and why when it does not map.

    Maps: knob (conversion, precision, threads), layer (exclude: the layer goes
    dense; pad: the layer's input width is padded up to a multiple of M, with
    every layer that produces or carries that width), block (a larger V for one
    V:N:M layer or all of them). Advice is not a workload change.
    """
    from sparsedebug.sources.replay.workload import revalidate

    if fix.kind == "knob":
        if fix.knob == "conversion" and fix.value in ("once", "per_call"):
            old = workload.conversion
            new = workload.model_copy(update={"conversion": fix.value})
            return revalidate(new), f"conversion {old} -> {fix.value}"
        if fix.knob == "precision" and isinstance(fix.value, str):
            old_p = workload.precision
            new = workload.model_copy(update={"precision": fix.value, "layers": [
                layer.model_copy(update={"dtype": None}) for layer in workload.layers
            ]})
            return revalidate(new), f"precision {old_p} -> {fix.value} (per-layer dtype overrides cleared)"
        if fix.knob == "threads" and fix.value is not None:
            threads = int(fix.value)
            new = workload.model_copy(update={"threads": threads})
            return revalidate(new), f"threads {workload.threads or 'default'} -> {threads}"
        return None, f"knob {fix.knob}={fix.value} is not a workload knob sparsedebug can set"
    if fix.kind == "layer" and fix.layer is not None:
        names = [layer.name for layer in workload.layers]
        if fix.layer not in names:
            return None, f"layer {fix.layer} is not in workload {workload.name}"
        if fix.action == "exclude":
            layers = [
                layer.model_copy(update={"sparsity": "dense"}) if layer.name == fix.layer else layer
                for layer in workload.layers
            ]
            old_s = workload.layers[names.index(fix.layer)].sparsity
            return revalidate(workload.model_copy(update={"layers": layers})), f"{fix.layer}: sparsity {old_s} -> dense (excluded)"
        if fix.action == "pad":
            return _pad_layer(workload, fix.layer)
        if fix.action == "cast" and isinstance(fix.value, str):
            target = workload.layers[names.index(fix.layer)]
            old_dtype = workload.dtype_of(target)
            layers = [
                layer.model_copy(update={"dtype": fix.value}) if layer.name == fix.layer else layer
                for layer in workload.layers
            ]
            return revalidate(workload.model_copy(update={"layers": layers})), f"{fix.layer}: dtype {old_dtype} -> {fix.value}"
    if fix.kind == "block" and fix.value is not None:
        target_v = int(fix.value)
        changed = []
        layers = []
        for layer in workload.layers:
            parts = layer.sparsity.split(":")
            if len(parts) == 3 and (fix.layer is None or fix.layer == layer.name):
                changed.append(f"{layer.name} {layer.sparsity} -> {target_v}:{parts[1]}:{parts[2]}")
                layer = layer.model_copy(update={"sparsity": f"{target_v}:{parts[1]}:{parts[2]}"})
            layers.append(layer)
        if not changed:
            return None, "no V:N:M layer to change the block size of"
        return revalidate(workload.model_copy(update={"layers": layers})), "block size: " + ", ".join(changed)
    return None, f"advice, not a workload change: {fix.text}"


_PAD_SEARCH = 1024
"""Largest padding (elements) tried on one dimension."""


def _accepts(workload: Workload, name: str, out: int, k: int) -> bool:
    """Whether the workload's backend profile takes ``name`` sparse at shape (out, k)."""
    from sparsedebug.kernels.masks import parse_pattern
    from sparsedebug.sources.replay.lowering import LayerQuery, get_profile

    layer = next(layer for layer in workload.layers if layer.name == name)
    if k % parse_pattern(layer.sparsity).m:
        return False
    query = LayerQuery(
        name=name, op="linear", out=out, k=k, dtype=workload.dtype_of(layer), pattern=layer.pattern, compliant=None
    )
    return get_profile(workload.backend).decide(query).path == KernelPath.SPARSE


def _width_group(workload: Workload, consumer: str) -> tuple[set[str], set[str]] | str:
    """The linear producers and width-carrying ops behind ``consumer``'s input, or why it cannot be padded."""
    from sparsedebug.sources.replay.workload import resolved_inputs

    index = {layer.name: i for i, layer in enumerate(workload.layers)}
    producers: set[str] = set()
    carriers: set[str] = set()
    frontier = list(resolved_inputs(workload, index[consumer]))
    while frontier:
        src = frontier.pop()
        if src == "input" or src not in index:
            return f"{consumer}: its input width comes from the model input; pad the input instead"
        layer = workload.layers[index[src]]
        if layer.op == "linear":
            producers.add(src)
        elif layer.op in ("activation", "elementwise"):
            if src not in carriers:
                carriers.add(src)
                frontier.extend(resolved_inputs(workload, index[src]))
        else:
            return f"{consumer}: its input width passes through {layer.op} {src}, which cannot be padded"
    group = producers | carriers
    outside = [
        layer.name
        for i, layer in enumerate(workload.layers)
        if layer.name != consumer and layer.name not in carriers and any(s in group for s in resolved_inputs(workload, i))
    ]
    if outside:
        return f"{consumer}: that width also feeds {', '.join(outside)}; padding would change them too"
    return producers, carriers


def _pad_layer(workload: Workload, name: str) -> tuple[Workload | None, str]:
    """Pad ``name`` to the smallest shape the backend profile takes sparse, keeping the graph consistent.

    A misaligned input width K is padded together with the linear layers that
    produce it (through activations and elementwise ops); a misaligned output
    width is padded as the input width of its single linear consumer, which
    widens this layer and its siblings. Widths that reach the model input, a norm,
    attention or another consumer cannot be padded this way. The workload cannot
    hold zero rows, so the added rows are seeded weights like the rest: timing is
    that of zero padding, while quality also sees the extra neurons.
    """
    from sparsedebug.sources.replay.workload import check_graph, resolved_inputs, revalidate

    shapes = {s.name: s for s in check_graph(workload)}
    target = next(layer for layer in workload.layers if layer.name == name)
    if target.op != "linear" or target.pattern is None:
        return None, f"{name} is not a sparse linear layer"
    out, k = shapes[name].out_width, shapes[name].in_widths[0]
    if _accepts(workload, name, out, k):
        return None, f"{name}: shape ({out}, {k}) already lowers sparse; padding changes nothing"
    new_k = next((k + d for d in range(1, _PAD_SEARCH) if _accepts(workload, name, out, k + d)), None)
    new_out = next((out + d for d in range(1, _PAD_SEARCH) if _accepts(workload, name, out + d, k)), None)
    widths: dict[str, int] = {}  # consumer -> padded input width
    if new_k is not None:
        widths[name] = new_k
        what = f"K {k} -> {new_k}"
    elif new_out is not None:
        consumers: list[str] = []
        frontier = [name]
        seen: set[str] = set()
        while frontier:
            src = frontier.pop()
            for i, layer in enumerate(workload.layers):
                if src in resolved_inputs(workload, i) and layer.name not in seen:
                    seen.add(layer.name)
                    if layer.op == "linear":
                        consumers.append(layer.name)
                    elif layer.op in ("activation", "elementwise"):
                        frontier.append(layer.name)
                    else:
                        return None, f"{name}: its output feeds {layer.op} {layer.name}, which cannot be padded"
        if len(consumers) != 1:
            return None, f"{name}: its output width reaches {len(consumers)} linear layers; pad needs exactly one"
        widths[consumers[0]] = new_out
        what = f"out {out} -> {new_out}"
    else:
        return None, f"{name}: no padding of up to {_PAD_SEARCH} on one dimension makes ({out}, {k}) lower sparse"
    (consumer, width), = widths.items()
    group = _width_group(workload, consumer)
    if isinstance(group, str):
        return None, group
    producers, _ = group
    layers = []
    for layer in workload.layers:
        if layer.name in producers and layer.shape is not None:
            layer = layer.model_copy(update={"shape": [width, layer.shape[1]]})
        if layer.name == consumer and layer.shape is not None:
            layer = layer.model_copy(update={"shape": [layer.shape[0], width]})
        layers.append(layer)
    try:
        fixed = revalidate(workload.model_copy(update={"layers": layers}))
    except UserError as exc:
        return None, f"{name}: padding {what} breaks the graph: {exc}"
    return fixed, (
        f"{name}: padded {what}; {', '.join(sorted(producers))} widened to {width} outputs and {consumer} to {width} "
        f"inputs (added rows are seeded weights, not zeros: timing as zero padding, quality sees the extra neurons)"
    )


def run_playbook(
    out_dir: Path,
    *,
    baseline: Path | None = None,
    candidate: Path | None = None,
    fixed: Path | None = None,
    repeats: int | None = None,
    ncu: Path | None = None,
    smi: Path | None = None,
    playbook: Path | None = None,
    reporter: Reporter | None = None,
    reduce: bool = True,
) -> LoadedBundle:
    """Walk the five steps and write a complete bundle to ``out_dir``; return it loaded.

    With neither ``baseline`` nor ``candidate``, the embedded default pair is used
    (dense Llama-style stack vs its 2:4 candidate with a planted regression).
    A workload is replayed, a trace imported, a run record loaded. When both sides
    are workloads, step 4 reduces them to a reproducer and, when the proposed fix
    maps onto a workload, applies it to a copy of the candidate and replays it;
    ``fixed`` (any input kind) is used as the fixed candidate instead. The bundle
    is built in a temporary sibling directory and moved into place at the end, so
    a failed walk leaves no half-written bundle.
    """
    from sparsedebug.classify.score import classify_run
    from sparsedebug.core.io import atomic_write_text, file_digest, save_record
    from sparsedebug.core.resources import embedded_workload
    from sparsedebug.freeze import fingerprint as fp_mod
    from sparsedebug.locate.walk import bisect_runs
    from sparsedebug.playbook.bundle import FILES, MANIFEST, Bundle, BundleInput, FixOutcome, StepRecord, load_bundle
    from sparsedebug.render.markdown.deployment import render_report
    from sparsedebug.render.markdown.memo import render_memo
    from sparsedebug.signoff.movement import measure_movement
    from sparsedebug.sources.detect import detect_input, load_run
    from sparsedebug.sources.replay.workload import load_workload, save_workload

    say: Reporter = reporter or _QuietReporter()
    book = load_playbook(playbook)
    if (baseline is None) != (candidate is None):
        raise UserError("give both --baseline and --candidate, or neither for the embedded default pair")
    embedded = baseline is None
    base_path = baseline if baseline is not None else embedded_workload(DEFAULT_BASELINE)
    cand_path = candidate if candidate is not None else embedded_workload(DEFAULT_CANDIDATE)
    kinds = {"baseline": detect_input(base_path), "candidate": detect_input(cand_path)}
    if fixed is not None:
        kinds["fixed"] = detect_input(fixed)
    for opt, path in (("--ncu", ncu), ("--smi", smi)):
        if path is not None and not path.is_file():
            raise UserError(f"{path}: file not found ({opt})")
    _check_out_dir(out_dir)

    tmp = out_dir.parent / f".{out_dir.name}.partial-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=False)
    files: dict[str, str] = {}
    steps: list[StepRecord] = []

    def save(role: str, record: BaseModel) -> None:
        save_record(record, tmp / FILES[role])
        files[role] = FILES[role]

    def finish(step: Step, status: Literal["done", "skipped"], detail: str, started: float) -> None:
        steps.append(StepRecord(step=step.id, status=status, detail=detail, seconds=round(time.perf_counter() - started, 3)))
        say.done(step, status, detail)

    try:
        # 1 freeze
        step = book.step("freeze")
        t0 = time.perf_counter()
        say.step(step, "fingerprint the environment")
        cand_wl = load_workload(cand_path) if kinds["candidate"] == "workload" else None
        base_wl = load_workload(base_path) if kinds["baseline"] == "workload" else None
        fingerprint = fp_mod.collect(
            seed=cand_wl.seed if cand_wl is not None else None,
            workload=cand_path if cand_wl is not None else None,
        )
        save("fingerprint", fingerprint)
        finish(step, "done", f"seed {fingerprint.seed}, git {fingerprint.git.revision[:12] if fingerprint.git else '-'}", t0)

        # 2 locate
        step = book.step("locate")
        t0 = time.perf_counter()
        runs: dict[str, RunRecord] = {}
        for role, path in (("baseline", base_path), ("candidate", cand_path)):
            verb = {"run": "load", "workload": "replay", "trace": "import"}[kinds[role]]
            say.step(step, f"{verb} {role} {path.name}")
            runs[role] = load_run(path, repeats=repeats, progress=say.progress)
            save(role, runs[role])
        say.step(step, "bisect the five stages")
        bis = bisect_runs(runs["baseline"], runs["candidate"])
        save("bisect", bis)
        finish(step, "done", f"{bis.state}: first stage {bis.first_stage or '-'}", t0)

        # 3 classify
        step = book.step("classify")
        t0 = time.perf_counter()
        say.step(step, "score compute, memory, scheduling, precision, thermal")
        ncu_report = smi_report = None
        if ncu is not None:
            from sparsedebug.sources.importers.ncu import load_ncu

            ncu_report = load_ncu(ncu)
        if smi is not None:
            from sparsedebug.sources.importers.nvidia_smi import load_smi

            smi_report = load_smi(smi)
        cls = classify_run(
            runs["candidate"], baseline=runs["baseline"], ncu=ncu_report, smi=smi_report,
            fingerprint=fingerprint if kinds["candidate"] == "workload" else None, run_path=str(cand_path),
        )
        save("classification", cls)
        finish(step, "done", f"winner {cls.winner.value if cls.winner else 'none'}", t0)

        # 4 reproduce and fix
        step = book.step("reproduce")
        t0 = time.perf_counter()
        notes = []
        if reduce and base_wl is not None and cand_wl is not None:
            from sparsedebug.reduce.reduce import reduce_workloads

            say.step(step, "reduce to a focused reproducer (ddmin over the differences)")
            red = reduce_workloads(
                base_wl, cand_wl, progress=lambda text: say.progress(text, 0, 0),
                good_dir=base_path.parent, bad_dir=cand_path.parent, repro_path=Path(FILES["reproducer"]),
            )
            save("reduce", red)
            if red.repro is not None and red.base is not None:
                save_workload(red.repro, tmp / FILES["reproducer"])
                save_workload(red.base, tmp / FILES["reproducer_base"])
                files["reproducer"] = FILES["reproducer"]
                files["reproducer_base"] = FILES["reproducer_base"]
            notes.append(f"{red.verdict} ({red.replays} timed replays, {red.static_probes} static probes)")
        elif not reduce:
            notes.append("reduce skipped on request")
        else:
            notes.append("no reduction: both sides must be workloads")
        fix_dict = cls.fix.model_dump(mode="json") if cls.fix is not None else None
        fixed_run: RunRecord | None = None
        how: str
        source: Literal["applied_to_workload", "given", "none"] = "none"
        applied = False
        if fixed is not None:
            say.step(step, f"load the fixed candidate {fixed.name}")
            fixed_run = load_run(fixed, repeats=repeats, progress=say.progress)
            how = f"fixed candidate given: {fixed} ({kinds['fixed']})"
            source, applied = "given", True
        elif cand_wl is not None and cls.fix is not None:
            new_wl, how = apply_fix(cand_wl, cls.fix)
            if new_wl is not None:
                new_wl = _absolute_paths(new_wl, cand_path.parent).model_copy(update={"name": f"{cand_wl.name}_fixed"})
                wl_path = tmp / FILES["fixed_workload"]
                save_workload(new_wl, wl_path)
                files["fixed_workload"] = FILES["fixed_workload"]
                source, applied = "applied_to_workload", True
                how = f"{how}, written to {FILES['fixed_workload']}"
        elif cls.fix is None:
            how = "no fix proposed"
        else:
            how = f"the candidate is a {kinds['candidate']}, not a workload: pass --fixed with a re-run after: {cls.fix.text}"
        notes.append(("applied: " if applied else "not applied: ") + how)
        finish(step, "done", "; ".join(notes), t0)

        # 5 re-run the matrix
        step = book.step("rerun")
        t0 = time.perf_counter()
        if source == "applied_to_workload":
            say.step(step, "replay the fixed candidate")
            from sparsedebug.sources.replay.replay import replay

            fixed_run = replay(
                load_workload(tmp / FILES["fixed_workload"]), repeats=repeats, progress=say.progress,
                source_path=tmp / FILES["fixed_workload"],
            )
            fixed_run = _relabel(fixed_run, FILES["fixed_workload"])
        outcome = FixOutcome(proposed=fix_dict, applied=applied, how=how, fixed_source=source)
        if fixed_run is not None:
            save("fixed", fixed_run)
            moves, verdict, moved, target = measure_movement(runs["baseline"], runs["candidate"], fixed_run, fix_dict)
            outcome = outcome.model_copy(
                update={"movements": moves, "significance": verdict, "moved": moved, "target": target}
            )
        save("fix", outcome)
        finish(
            step, "done" if fixed_run is not None else "skipped",
            (f"fixed p50 moved: {outcome.moved}" if fixed_run is not None else "no fixed candidate to re-run"), t0,
        )

        inputs = []
        for role, path in (("baseline", base_path), ("candidate", cand_path), ("fixed", fixed)):
            if path is None:
                continue
            label = f"embedded:{path.name}" if embedded and role != "fixed" else str(path)
            inputs.append(BundleInput(role=role, kind=kinds[role], file=file_digest(path), label=label))
        files["memo"], files["report"] = FILES["memo"], FILES["report"]
        manifest = Bundle(
            created_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            playbook=book.id, inputs=inputs, steps=steps, files=dict(files), repeats=repeats,
        )
        # Memo and report render from the bundle as written, exactly as `sparsedebug memo` would.
        save_record(manifest, tmp / MANIFEST)
        atomic_write_text(tmp / FILES["memo"], "(rendering)\n")
        atomic_write_text(tmp / FILES["report"], "(rendering)\n")
        loaded = load_bundle(tmp)
        loaded = loaded.model_copy(update={"root": out_dir})
        atomic_write_text(tmp / FILES["report"], render_report(loaded))
        atomic_write_text(tmp / FILES["memo"], render_memo(loaded, book))
        _swap_into_place(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return load_bundle(out_dir)


def _check_out_dir(out_dir: Path) -> None:
    from sparsedebug.playbook.bundle import MANIFEST

    if out_dir.exists():
        if not out_dir.is_dir():
            raise UserError(f"{out_dir}: exists and is not a directory")
        if any(out_dir.iterdir()) and not (out_dir / MANIFEST).is_file():
            raise UserError(f"{out_dir}: not empty and not a sparsedebug bundle; choose another -o")
    parent = out_dir.parent if str(out_dir.parent) else Path(".")
    if not parent.is_dir():
        raise UserError(f"{out_dir}: parent directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise UserError(f"{out_dir}: cannot write to {parent}")


def _swap_into_place(tmp: Path, out_dir: Path) -> None:
    """Replace ``out_dir`` (an old bundle or nothing) with the finished ``tmp`` bundle."""
    old = None
    if out_dir.exists():
        old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
        out_dir.rename(old)
    tmp.rename(out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _absolute_paths(workload: Workload, base_dir: Path) -> Workload:
    """Resolve the workload's relative weights/calibration paths so a copy elsewhere still finds them."""
    update: dict[str, object] = {}
    if workload.weights is not None and not Path(workload.weights.path).is_absolute():
        update["weights"] = workload.weights.model_copy(update={"path": str((base_dir / workload.weights.path).resolve())})
    if workload.calibration is not None and not Path(workload.calibration.path).is_absolute():
        update["calibration"] = workload.calibration.model_copy(
            update={"path": str((base_dir / workload.calibration.path).resolve())}
        )
    return workload.model_copy(update=update) if update else workload


def _relabel(run: RunRecord, name: str) -> RunRecord:
    """Cite the fixed workload by its name inside the bundle rather than the temporary path."""
    if run.workload is None or run.workload.file is None:
        return run
    ref = run.workload.model_copy(update={"file": run.workload.file.model_copy(update={"path": name})})
    return run.model_copy(update={"workload": ref})
