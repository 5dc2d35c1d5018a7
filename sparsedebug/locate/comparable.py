"""Compare only what is comparable: the one check every comparing command runs first.

:func:`check_pair` decides, from layer shapes and device properties (never from layer names;
where layers are kernel names, a CUDA-graph replay, from the kernels the two share), whether a baseline and a candidate are runs of

- the same **model**: layers are matched by identity (op kind, weight shape, feature
  width, phase) in order, so a renamed copy matches and a same-name layer of another
  shape does not; fewer than ``MODEL_MIN_SHARE`` of the larger run's layers matched is
  another model. A trace annotated coarsely (one ``record_function`` over several ops)
  against its annotation-stripped copy is first merged op for op to the annotated
  granularity (``GraphLayer.ops``), so the two match layer for layer;
- on the same **device** and backend family (a trace's deviceProperties: family, compute
  capability, multiprocessors, memory; a replay runs on this machine's CPU, so an H200
  trace against a replay is a device difference);
- in the same **phase** (inference, or a training step with backward and optimizer);
- with the same **tokens** per call and the same dominant **dtype** of the compute layers;
- launched the same way (**launch**): eager, replayed from a CUDA graph, or compiled (a trace's
  ``cudaGraphLaunch`` calls, Inductor's ``triton_*`` kernels); host overhead differs by mode, so an
  eager run against a CUDA-graph one is not like for like.

What a regression may legitimately change (a few layers, the backend, the dtype of some
layers) is a note: the comparison runs and reports it. :func:`require_comparable` refuses
the rest with one line (exit 2) unless ``--allow-different`` names the dimension, and
returns the pair with the candidate's matched layers under the baseline's names, the
form every stage compares.
"""

from __future__ import annotations

import difflib
from collections import Counter, defaultdict, deque
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from sparsedebug.core.errors import UserError
from sparsedebug.core.kernel_names import primary_class
from sparsedebug.core.patterns import kernel_named, unrelated_by_kernels
from sparsedebug.records.comparability import (
    DIMENSIONS,
    MODEL_MIN_SHARE,
    Comparability,
    DeviceInfo,
    Difference,
    Dimension,
    LaunchMode,
    LayerMatch,
)
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import (
    GraphLayer,
    KernelLayer,
    KernelPath,
    LowerLayer,
    OpKind,
    RunRecord,
    ScheduleStage,
    TimelineStrip,
)
from sparsedebug.sources.registry import capabilities

_COMPUTE_OPS = (OpKind.LINEAR, OpKind.ATTENTION)
# A dtype change on at least this share of the compute (and two layers or more) is another model's dtype, not a
# regression's.
DTYPE_MAX_SHARE = 0.9
# Layers named per side in a refusal or a note.
_SHOWN = 3


@dataclass
class ComparedPair:
    """A checked pair: the runs as every stage compares them, and the check."""

    base: RunRecord
    cand: RunRecord
    check: Comparability


# --------------------------------------------------------------------------- device, phase, dtype


def device_of(run: RunRecord) -> DeviceInfo:
    """The device ``run`` was timed on: as recorded, else from its backend label (older traces), else this machine's CPU (replays)."""
    if run.device is not None:
        return run.device
    if capabilities(run).accelerator:
        family, _sep, name = run.lower.backend.partition(":")
        return DeviceInfo(kind="gpu", family=family if family in ("cuda", "rocm") else "cuda", name=name or None)
    cpu = run.fingerprint.cpu.model if run.fingerprint is not None else None
    return DeviceInfo(kind="cpu", family="cpu", name=cpu)


def phase_of(run: RunRecord) -> str:
    """``training step`` when the run has backward or optimizer layers (the trace's autograd structure), else ``inference``."""
    phases = {layer.phase for layer in run.lower.layers if layer.phase is not None}
    return "training step" if phases & {"backward", "optimizer"} else "inference"


def dominant_dtype(run: RunRecord) -> str | None:
    """The dtype carrying most of the compute layers' FLOPs (layer count when FLOPs are unknown)."""
    layers = [g for g in run.graph.layers if g.op in _COMPUTE_OPS and g.dtype != "unknown"] or [
        g for g in run.graph.layers if g.dtype != "unknown"
    ]
    weight: dict[str, float] = {}
    for g in layers:
        weight[g.dtype] = weight.get(g.dtype, 0.0) + (g.flops if g.flops > 0 else 1.0)
    return max(weight, key=lambda dtype: weight[dtype]) if weight else None


def dtype_changes(base: RunRecord, cand: RunRecord) -> tuple[list[str], float]:
    """Layers (same names) whose dtype differs, and the share of the compute layers' FLOPs (count when unknown) they carry."""
    b_dtypes = {g.name: g.dtype for g in base.graph.layers}
    changed = [g.name for g in cand.graph.layers if g.name in b_dtypes and g.dtype != b_dtypes[g.name] and "unknown" not in (g.dtype, b_dtypes[g.name])]
    compute = [g for g in cand.graph.layers if g.name in b_dtypes and g.op in _COMPUTE_OPS] or [g for g in cand.graph.layers if g.name in b_dtypes]
    total = sum(g.flops if g.flops > 0 else 1.0 for g in compute)
    moved = sum(g.flops if g.flops > 0 else 1.0 for g in compute if g.name in set(changed))
    return changed, (moved / total if total else 0.0)


def launch_of(run: RunRecord) -> LaunchMode | None:
    """How a traced run was launched: ``cuda_graph`` (cudaGraphLaunch), ``compiled`` (Inductor ``triton_*`` kernels,
    a compiled region op), else ``eager``; None for a replay (its kernels are this machine's, not launched on a GPU)."""
    from sparsedebug.sources.registry import capabilities

    if not capabilities(run).timeline:
        return None
    if run.source.runtime is not None and run.source.runtime.cuda_graph:
        return "cuda_graph"
    kernels = (k for lo in run.lower.layers for k in lo.kernels)
    ops = (op for g in run.graph.layers for op in g.ops)
    if any(k.startswith("triton_") for k in kernels) or any("Compiled" in op for op in ops):
        return "compiled"
    return "eager"


def _device_difference(b: DeviceInfo, c: DeviceInfo) -> Note | None:
    """What tells the two devices apart (``locate.differ.device``: the properties that differ), None when nothing does."""
    if b.kind != c.kind or b.family != c.family or b.kind == "cpu":
        if b.kind == "cpu" and c.kind == "cpu" and not (b.name and c.name and b.name != c.name):
            return None
        return note("locate.differ.device", base=b.label(), cand=c.label(), props=[], before=[], after=[])
    gib = (f"{b.memory_bytes / 2**30:.0f}", f"{c.memory_bytes / 2**30:.0f}") if b.memory_bytes and c.memory_bytes else ("", "")
    has_props = any((b.compute_capability and c.compute_capability, b.multiprocessors and c.multiprocessors, b.memory_bytes and c.memory_bytes))
    rows = [  # (property, baseline, candidate, whether it tells the devices apart)
        ("compute_capability", str(b.compute_capability), str(c.compute_capability),
         bool(b.compute_capability and c.compute_capability and b.compute_capability != c.compute_capability)),
        ("multiprocessors", str(b.multiprocessors), str(c.multiprocessors),
         bool(b.multiprocessors and c.multiprocessors and b.multiprocessors != c.multiprocessors)),
        ("memory_gib", *gib, bool(b.memory_bytes and c.memory_bytes and max(b.memory_bytes, c.memory_bytes) > 1.02 * min(b.memory_bytes, c.memory_bytes))),
        ("name", str(b.name), str(c.name), bool(not has_props and b.name and c.name and b.name.lower() != c.name.lower())),
    ]
    props, before, after = [r[0] for r in rows if r[3]], [r[1] for r in rows if r[3]], [r[2] for r in rows if r[3]]
    return note("locate.differ.device", base=b.label(), cand=c.label(), props=props, before=before, after=after) if props else None


# --------------------------------------------------------------------------- layer identity


# A layer's structure: phase, op kind, weight shape, input width, and the ops (with shapes) its first call ran.
LayerKey = tuple[str, str, tuple[int, ...] | None, int | None, tuple[str, ...]]


def _key(graph: GraphLayer, phase: str | None) -> LayerKey:
    width = graph.input_shape[-1] if graph.input_shape else None
    return (phase or "forward", graph.op.value, tuple(graph.weight_shape) if graph.weight_shape else None, width, tuple(graph.ops))


def _keys(run: RunRecord) -> list[LayerKey]:
    phases = {layer.name: layer.phase for layer in run.lower.layers}
    return [_key(g, phases.get(g.name)) for g in run.graph.layers]


def _describe(graph: GraphLayer) -> str:
    shape = graph.weight_shape or graph.input_shape
    return f"{graph.name} ({graph.op.value}{' ' + 'x'.join(map(str, shape)) if shape else ''})"


def _pairs(bkeys: Sequence[Hashable], ckeys: Sequence[Hashable]) -> list[tuple[int, int]]:
    """Pair two sequences of structural keys: the longest common subsequence (order kept), then what it left, equal
    key to equal key in order (an op the candidate runs earlier or later is the same op: equal multisets of keys
    leave nothing unpaired)."""
    if list(bkeys) == list(ckeys):
        return [(i, i) for i in range(len(bkeys))]
    matcher = difflib.SequenceMatcher(None, bkeys, ckeys, autojunk=False)
    pairs = [(a + k, b + k) for a, b, size in matcher.get_matching_blocks() for k in range(size)]
    paired_b, paired_c = {i for i, _ in pairs}, {j for _, j in pairs}
    free: dict[Hashable, deque[int]] = defaultdict(deque)
    for i, key in enumerate(bkeys):
        if i not in paired_b:
            free[key].append(i)
    for j, key in enumerate(ckeys):
        if j not in paired_c and free.get(key):
            pairs.append((free[key].popleft(), j))
    return sorted(pairs)


def _layer_pairs(bkeys: list[LayerKey], ckeys: list[LayerKey]) -> list[tuple[int, int]]:
    """Pair two runs' layers by structure (:func:`_pairs`): first by the whole key, the ops each layer ran
    included, so a layer is never paired with another op of the same kind and shape while its own is there; then
    what is left by kind and shapes alone (a layer whose ops differ between the runs, e.g. another PyTorch)."""
    exact = _pairs(bkeys, ckeys)
    paired_b, paired_c = {i for i, _ in exact}, {j for _, j in exact}
    rest_b = [i for i in range(len(bkeys)) if i not in paired_b]
    rest_c = [j for j in range(len(ckeys)) if j not in paired_c]
    loose = _pairs([bkeys[i][:4] for i in rest_b], [ckeys[j][:4] for j in rest_c])
    return sorted(exact + [(rest_b[x], rest_c[y]) for x, y in loose])


def _chunk_sums(samples: list[float], n: int) -> list[float]:
    """``samples`` summed into ``n`` consecutive groups (calls of one merged call)."""
    size = len(samples) / n
    return [sum(samples[round(k * size) : round((k + 1) * size)]) for k in range(n)]


def _merge_samples(groups: list[list[float]]) -> list[float]:
    present = [g for g in groups if g]
    if not present:
        return []
    n = min(len(g) for g in present)
    sums = [0.0] * n
    for g in present:
        for k, value in enumerate(g if len(g) == n else _chunk_sums(g, n)):
            sums[k] += value
    return sums


@dataclass
class _Layers:
    graph: list[GraphLayer]
    lower: dict[str, LowerLayer]
    kernel: dict[str, KernelLayer]


def _layers(run: RunRecord) -> _Layers:
    return _Layers(list(run.graph.layers), {lo.name: lo for lo in run.lower.layers}, {k.name: k for k in run.kernel.layers})


def _merge_group(name: str, members: list[GraphLayer], coarse: GraphLayer, run: _Layers) -> tuple[GraphLayer, LowerLayer | None, KernelLayer | None]:
    """One layer of ``name`` from the fine run's ``members`` (the ops the coarse run's layer holds)."""
    target = _key(coarse, None)[1:4]
    primary = next((g for g in members if _key(g, None)[1:4] == target), None) or next(
        (g for g in members if g.op is coarse.op), members[0]
    )
    graph = primary.model_copy(update={  # the same ops, so the kind the coarse run's layer was given
        "name": name, "op": coarse.op, "params": sum(g.params for g in members), "flops": sum(g.flops for g in members),
        "bytes": sum(g.bytes for g in members), "ops": [op for g in members for op in g.ops],
    })
    lowers = [run.lower[g.name] for g in members if g.name in run.lower]
    lower = None
    if lowers:
        main = run.lower.get(primary.name, lowers[0])
        sparse = any(lo.path is KernelPath.SPARSE for lo in lowers)
        classes = {lo.kernel_class for lo in lowers if lo.kernel_class is not None}
        lower = main.model_copy(update={
            "name": name, "path": KernelPath.SPARSE if sparse else main.path,
            "reason": None if sparse else main.reason,
            "kernel_class": primary_class(classes) if classes else None,
            "kernels": list(dict.fromkeys(k for lo in lowers for k in lo.kernels)),
            "detail": note("locate.compare.merged_layer", count=len(members), layers=[g.name for g in members[:4]],
                           more=max(len(members) - 4, 0)),
        })
    kernels = [run.kernel[g.name] for g in members if g.name in run.kernel]
    kernel = None
    if kernels:
        by_class: Counter[str] = Counter()
        for k in kernels:
            by_class.update(k.by_class_ms)
        dense = [k.dense_samples_ms for k in kernels]
        errors = [k.rel_err for k in kernels if k.rel_err is not None]
        kernel = KernelLayer(
            name=name, samples_ms=_merge_samples([k.samples_ms for k in kernels]),
            dense_samples_ms=_merge_samples([d for d in dense if d]) if all(dense) else None,
            by_class_ms=dict(by_class), precision=next((k.precision for k in kernels if k.precision), None),
            rel_err=max(errors) if errors else None,
            max_abs_err=max((k.max_abs_err for k in kernels if k.max_abs_err is not None), default=None),
        )
    return graph, lower, kernel


def _merge_to(coarse: RunRecord, fine: RunRecord) -> tuple[RunRecord, int] | None:
    """``fine`` with its layers merged into ``coarse``'s, op for op (``GraphLayer.ops``); None when that does not fit."""
    if not all(g.ops for g in coarse.graph.layers) or not all(g.ops for g in fine.graph.layers):
        return None
    coarse_of: list[int] = [i for i, g in enumerate(coarse.graph.layers) for _op in g.ops]
    coarse_tokens = [op for g in coarse.graph.layers for op in g.ops]
    fine_tokens: list[str] = []
    owner: list[int] = []
    for j, g in enumerate(fine.graph.layers):
        fine_tokens += g.ops
        owner += [j] * len(g.ops)
    position = dict((b, a) for a, b in _pairs(list(coarse_tokens), list(fine_tokens)))
    assigned: dict[int, int] = {}
    for j, g in enumerate(fine.graph.layers):
        spots = {coarse_of[position[t]] for t, o in enumerate(owner) if o == j and t in position}
        if len(spots) == 1 and all(t in position for t, o in enumerate(owner) if o == j):
            assigned[j] = spots.pop()
    if len(set(assigned.values())) < MODEL_MIN_SHARE * len(coarse.graph.layers):
        return None
    layers = _layers(fine)
    groups: dict[int, list[GraphLayer]] = {}
    for j, i in assigned.items():
        groups.setdefault(i, []).append(fine.graph.layers[j])
    graph: list[GraphLayer] = []
    lower: list[LowerLayer] = []
    kernel: list[KernelLayer] = []
    renames: dict[str, str] = {}
    done: set[int] = set()
    for j, g in enumerate(fine.graph.layers):
        if j not in assigned:
            graph.append(g)
            lower += [layers.lower[g.name]] if g.name in layers.lower else []
            kernel += [layers.kernel[g.name]] if g.name in layers.kernel else []
            continue
        i = assigned[j]
        if i in done:
            continue
        done.add(i)
        name = coarse.graph.layers[i].name
        for member in groups[i]:
            renames.setdefault(member.name, name)
        mg, ml, mk = _merge_group(name, groups[i], coarse.graph.layers[i], layers)
        graph.append(mg)
        lower += [ml] if ml is not None else []
        kernel += [mk] if mk is not None else []
    merged = fine.model_copy(update={
        "graph": fine.graph.model_copy(update={"layers": graph}),
        "lower": fine.lower.model_copy(update={"layers": lower}),
        "kernel": fine.kernel.model_copy(update={"layers": kernel}),
        "schedule": _rename_schedule(fine, renames, first_only=True),
    })
    return merged, len(done)


def _rename_schedule(run: RunRecord, renames: dict[str, str], *, first_only: bool = False) -> ScheduleStage:
    """The schedule stage with per-layer keys renamed (merged layers keep the idle before their first member)."""
    idle: dict[str, list[float]] = {}
    for name, samples in run.schedule.layer_idle_samples_ms.items():
        new = renames.get(name, name)
        if new in idle and first_only:
            continue
        idle[new] = samples
    timeline: TimelineStrip | None = run.schedule.timeline
    if timeline is not None and renames:
        timeline = timeline.model_copy(update={"events": [
            e.model_copy(update={"layer": renames.get(e.layer, e.layer)}) if e.layer is not None else e for e in timeline.events
        ]})
    return run.schedule.model_copy(update={"layer_idle_samples_ms": idle, "timeline": timeline})


def _rename(run: RunRecord, renames: dict[str, str]) -> RunRecord:
    if not renames:
        return run

    def named(name: str) -> str:
        return renames.get(name, name)

    return run.model_copy(update={
        "graph": run.graph.model_copy(update={"layers": [g.model_copy(update={"name": named(g.name)}) for g in run.graph.layers]}),
        "lower": run.lower.model_copy(update={"layers": [lo.model_copy(update={"name": named(lo.name)}) for lo in run.lower.layers]}),
        "kernel": run.kernel.model_copy(update={"layers": [k.model_copy(update={"name": named(k.name)}) for k in run.kernel.layers]}),
        "schedule": _rename_schedule(run, renames),
    })


def match_layers(base: RunRecord, cand: RunRecord) -> tuple[RunRecord, RunRecord, LayerMatch]:
    """Both runs as the stages compare them, and the match.

    Matched candidate layers take the baseline's names; when one run holds the other's
    ops in fewer layers (an annotated trace against its stripped copy), the finer run is
    first merged into the coarser one's layers, op for op.
    """
    merged_note: Note | None = None
    pairs = _layer_pairs(_keys(base), _keys(cand))
    bigger = max(len(base.graph.layers), len(cand.graph.layers), 1)
    if len(pairs) < bigger and len(base.graph.layers) != len(cand.graph.layers):
        base_coarser = len(base.graph.layers) < len(cand.graph.layers)
        attempt = _merge_to(base, cand) if base_coarser else _merge_to(cand, base)
        if attempt is not None:
            merged, groups = attempt
            new_base, new_cand = (base, merged) if base_coarser else (merged, cand)
            new_pairs = _layer_pairs(_keys(new_base), _keys(new_cand))
            if len(new_pairs) > len(pairs):
                fine, coarse = ("candidate", "baseline") if base_coarser else ("baseline", "candidate")
                count = len(cand.graph.layers) if base_coarser else len(base.graph.layers)
                merged_note = note("locate.compare.merged", fine=fine, count=count, groups=groups, coarse=coarse)
                base, cand, pairs = new_base, new_cand, new_pairs
    b_layers, c_layers = base.graph.layers, cand.graph.layers
    renames: dict[str, str] = {}
    for i, j in pairs:
        if b_layers[i].name != c_layers[j].name:
            renames[c_layers[j].name] = b_layers[i].name
    matched_c = {j for _i, j in pairs}
    taken = set(renames.values())
    for j, g in enumerate(c_layers):  # an unmatched layer that would share a name with a renamed one keeps its own, marked
        if j not in matched_c and g.name in taken:
            renames[g.name] = f"{g.name} [candidate]"
    matched_b = {i for i, _j in pairs}
    only_base = [_describe(g) for i, g in enumerate(b_layers) if i not in matched_b]
    only_cand = [_describe(g) for j, g in enumerate(c_layers) if j not in matched_c]
    bigger = max(len(b_layers), len(c_layers), 1)
    match = LayerMatch(
        base_layers=len(b_layers), cand_layers=len(c_layers), matched=len(pairs), share=len(pairs) / bigger,
        renamed=sum(1 for name, new in renames.items() if not new.endswith(" [candidate]") and name != new),
        merged=merged_note, only_base=only_base[:_SHOWN], only_cand=only_cand[:_SHOWN],
    )
    return base, _rename(cand, renames), match


# --------------------------------------------------------------------------- the check


def _model_facts(code: str, match: LayerMatch, base: RunRecord, cand: RunRecord) -> Note:
    """How many layers matched by op and shape, and the first few of each side that did not."""
    return note(
        code, matched=match.matched, total=max(match.base_layers, match.cand_layers), share=match.share,
        base=base.name, only_base=match.only_base, more_base=max(0, match.base_layers - match.matched - len(match.only_base)),
        cand=cand.name, only_cand=match.only_cand, more_cand=max(0, match.cand_layers - match.matched - len(match.only_cand)),
    )


def check_pair(base: RunRecord, cand: RunRecord, allow: Iterable[Dimension] = ()) -> ComparedPair:
    """Check that ``base`` and ``cand`` can be compared; the pair as the stages compare it, and the check."""
    allowed = [d for d in DIMENSIONS if d in set(allow)]
    differences: list[Difference] = []
    notes: list[Note] = []

    def differ(dimension: Dimension, b: str, c: str, facts: Note) -> None:
        differences.append(Difference(dimension=dimension, base=b, cand=c, facts=facts, allowed=dimension in allowed))

    named = kernel_named(base) or kernel_named(cand)
    run_b, compared, match = (base, cand, LayerMatch(
        base_layers=len(base.graph.layers), cand_layers=len(cand.graph.layers), matched=0, share=0.0,
    )) if named else match_layers(base, cand)
    if named:
        notes.append(note("locate.compare.kernel_named"))
        unrelated = unrelated_by_kernels(base, cand) if dominant_dtype(base) == dominant_dtype(cand) else None
        if unrelated is not None:  # another dtype renames the kernels: the dtype difference says so instead
            differ("model", f"{unrelated.values['base_kernels']} kernels", f"{unrelated.values['cand_kernels']} kernels ({unrelated.values['common']} in common)", unrelated)
    elif match.share < MODEL_MIN_SHARE:
        differ("model", f"{match.base_layers} layers", f"{match.cand_layers} layers", _model_facts("locate.differ.model", match, base, cand))
    elif match.matched < max(match.base_layers, match.cand_layers):
        notes.append(_model_facts("locate.compare.layers_changed", match, base, cand))
    if match.renamed:
        notes.append(note("locate.compare.renamed", count=match.renamed))
    if match.merged:
        notes.append(match.merged)
    b_dev, c_dev = device_of(base), device_of(cand)
    device = _device_difference(b_dev, c_dev)
    if device is not None:
        differ("device", b_dev.label(), c_dev.label(), device)
    elif base.lower.backend != cand.lower.backend:
        notes.append(note("locate.compare.backend", base=base.lower.backend, cand=cand.lower.backend))
    b_phase, c_phase = phase_of(base), phase_of(cand)
    if b_phase != c_phase:
        differ("phase", b_phase, c_phase, note("locate.differ.phase", base=b_phase, cand=c_phase))
    bt, ct = base.graph.tokens, cand.graph.tokens
    if bt is not None and ct is not None and bt != ct:
        differ("tokens", str(bt), str(ct), note("locate.differ.tokens", base=bt, cand=ct, ratio=ct / bt))
    b_launch, c_launch = launch_of(base), launch_of(cand)
    if b_launch is not None and c_launch is not None and b_launch != c_launch:
        differ("launch", b_launch, c_launch, note("locate.differ.launch", base=b_launch, cand=c_launch))
    changed, share = dtype_changes(run_b, compared)
    if len(changed) >= 2 and share >= DTYPE_MAX_SHARE:
        b_dtype, c_dtype = dominant_dtype(run_b) or "?", dominant_dtype(compared) or "?"
        differ("dtype", b_dtype, c_dtype, note("locate.differ.dtype", base=b_dtype, cand=c_dtype, count=len(changed), share=share,
                                               layers=changed[:_SHOWN], more=len(changed) > _SHOWN))
    elif changed:
        notes.append(note("locate.compare.dtype_changed", count=len(changed), layers=changed[:_SHOWN], more=len(changed) > _SHOWN))
    check = Comparability(
        base=base.name, cand=cand.name, comparable=all(d.allowed for d in differences), layers=match,
        base_device=b_dev, cand_device=c_dev, base_phase=b_phase, cand_phase=c_phase, base_launch=b_launch, cand_launch=c_launch,
        differences=differences, allowed=allowed, notes=notes,
    )
    return ComparedPair(base=run_b, cand=compared, check=check)


class NotComparableError(UserError):
    """A pair that differs in a dimension the user did not allow; ``check`` says how (the CLI words it in full)."""

    def __init__(self, check: Comparability, message: str) -> None:
        super().__init__(message)
        self.check = check


def require_comparable(base: RunRecord, cand: RunRecord, allow: Iterable[Dimension] = ()) -> ComparedPair:
    """:func:`check_pair`, refusing a pair that is not comparable with a ``UserError`` (exit 2, one line)."""
    pair = check_pair(base, cand, allow)
    if not pair.check.comparable:
        blocking = [d for d in pair.check.differences if not d.allowed]
        raise NotComparableError(
            pair.check,
            f"{base.name} vs {cand.name}: not comparable: " + "; ".join(f"{d.dimension}: {d.base} vs {d.cand}" + (
                f" ({pair.check.layers.matched} of {max(pair.check.layers.base_layers, pair.check.layers.cand_layers)} layers match by op and shape)"
                if d.facts.code == "locate.differ.model" else "") for d in blocking)
            + "; pass " + " ".join(f"--allow-different {d.dimension}" for d in blocking) + " to compare anyway",
        )
    return pair


__all__ = ["ComparedPair", "NotComparableError", "check_pair", "device_of", "dominant_dtype", "launch_of", "match_layers",
           "phase_of", "require_comparable"]
