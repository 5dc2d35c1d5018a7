"""The memo's figure helpers: the one figure constructor, a gate check's figures and limits as the memo names them,
and the answer to "were the sparse kernels used?" for TensorRT engine pairs, as a claim with its figures."""

from __future__ import annotations

from pathlib import PurePath

from sparsedebug.records.basis import Basis
from sparsedebug.records.gate import GateCheck
from sparsedebug.records.memo import Claim, Figure, FigureSource, Unit
from sparsedebug.records.report import Clock
from sparsedebug.records.run import RunRecord
from sparsedebug.signoff.metrics import run_clock
from sparsedebug.sources.bundle import FILES, LoadedBundle


def fig(quantity: str, value: float, unit: Unit, record: str, field: str, *, role: str | None = None,
         clock: Clock | None = None, layer: str | None = None, basis: Basis | None = None) -> Figure:
    """A memo figure with its provenance (the one constructor signoff.memo and this module share)."""
    return Figure(quantity=quantity, role=role, value=value, unit=unit, clock=clock, basis=basis,
                  source=FigureSource(record=record, field=field, layer=layer))


def model_label(model: str) -> str:
    """A model as the memo names it: a registered name as is, a local folder by its own name (no local directories)."""
    return PurePath(model).name if "/" in model else model


# A gate figure's limit, as the memo names it (the policy's threshold the check held the figure to).
LIMIT_QUANTITY: dict[str, str] = {
    "speedup_p50": "speedup_min", "p99_ratio": "p99_max_ratio", "p99_ms": "p99_budget_ms", "cosine": "cosine_min",
    "rel_err": "rel_err_max", "accuracy_drop": "accuracy_drop_max", "fallback_rate": "fallback_rate_max",
    "worst_err_share": "worst_err_share_max", "precision_changes": "precision_changes_max",
}


def check_field(check_id: str, quantity: str) -> str:
    """Where a gate check's figure comes from: ``checks[ID].QUANTITY`` of the gate's verdict."""
    return f"checks[{check_id}].{quantity}"


def limit_field(check_id: str, quantity: str) -> str:
    """Where a gate check's limit figure comes from: ``checks[ID].QUANTITY.limit`` of the gate policy's verdict."""
    return f"{check_field(check_id, quantity)}.limit"


def past_limit(value: float, limit: float, direction: str) -> bool:
    """Whether ``value`` is on the failing side of ``limit`` (``direction``: which side passes, at_least or at_most)."""
    return value < limit if direction == "at_least" else value > limit


def sparse_kernels_claim(b: LoadedBundle) -> Claim | None:
    """Were the sparse kernels used (TensorRT engines): sparse tactics over layers with 2:4 weights, those not picked."""
    from sparsedebug.locate.lower import sparse_use

    role = "candidate" if sparse_use(b.candidate) is not None else "baseline"
    use = sparse_use(b.candidate) or sparse_use(b.baseline)
    if use is None:
        return None
    record = FILES[role]
    figures = [fig("sparse_tactic_layers", len(use.sparse), "count", record, "lower.layers[].engine.sparse_tactic", role=role),
               fig("sparse_weight_layers", len(use.sparse_weights), "count", record, "lower.layers[].engine.sparse_weights", role=role),
               fig("weighted_layers", use.weighted, "count", record, "lower.layers[].engine.weights", role=role)]
    code = "build_disabled" if use.build_disabled else ("no_sparse_weights" if not use.sparse_weights and not use.sparse else (
        "used" if use.sparse else "not_used"))
    if use.not_picked:
        figures.append(fig("not_picked_layers", len(use.not_picked), "count", record, "lower.layers[].engine.not_sparse", role=role))
    terms = {"run": use.run, "flags": " or ".join(use.enable_flags)}
    moved = _largest_layer_change(b.baseline, b.candidate, use.sparse + use.not_picked)
    if moved is not None:
        name, before, after = moved
        terms["changed_layer"] = name
        figures += [fig("layer_ms", before, "ms", FILES["baseline"], "kernel.layers[].samples_ms (profile median)", role="baseline", layer=name,
                        basis="per_forward"),
                    fig("layer_ms", after, "ms", FILES["candidate"], "kernel.layers[].samples_ms (profile median)", role="candidate", layer=name,
                        basis="per_forward"),
                    fig("change", after / before - 1, "share", FILES["candidate"], "kernel.layers[].samples_ms", role=f"layer:{name}")]
    return Claim(kind="sparse_kernels", code=code, figures=figures, terms=terms, items=use.not_picked[:3], more=max(0, len(use.not_picked) - 3))


def _largest_layer_change(base: RunRecord, cand: RunRecord, layers: list[str]) -> tuple[str, float, float] | None:
    """The layer among ``layers`` whose per-layer time moved most between the runs (first sample: a profile's median)."""
    b = {k.name: k.samples_ms[0] for k in base.kernel.layers if k.samples_ms}
    c = {k.name: k.samples_ms[0] for k in cand.kernel.layers if k.samples_ms}
    rows = [(name, b[name], c[name]) for name in layers if name in b and name in c and b[name] > 0]
    return max(rows, key=lambda row: abs(row[2] - row[1])) if rows else None


# What a gate figure's count and "of" count, as the memo names them (default: <quantity>_count, <quantity>_of).
COUNT_QUANTITY: dict[str, tuple[str, str]] = {"fallback_rate": ("fell_back", "meant_sparse")}


def check_figures(check: GateCheck, run: RunRecord, role: str) -> list[Figure]:
    """The numbers a gate check was judged on, as the check itself recorded them: the measured figure, the baseline's
    figure it quotes, how many it was taken over, and the policy's limit. The terminal table, JUnit and the step
    summary print these figures, so a figure has one value wherever it is printed."""
    record = FILES.get(role, f"{role}.run.json")
    clock = run_clock(run)
    out: list[Figure] = []
    for f in check.figures:
        if f.value is None:
            continue
        field = check_field(check.id, f.quantity)
        timed = clock if f.quantity in ("speedup_p50", "p99_ratio", "p99_ms") else None
        out.append(fig(f.quantity, f.value, f.unit, record, field, role=role, clock=timed))
        if f.baseline is not None:
            out.append(fig(f.quantity, f.baseline, f.unit, FILES["baseline"], field, role="baseline", clock=timed))
        count, of = COUNT_QUANTITY.get(f.quantity, (f"{f.quantity}_count", f"{f.quantity}_of"))
        if f.count is not None:
            out.append(fig(count, f.count, "count", record, f"{field}.count", role=role))
        if f.of is not None:
            out.append(fig(of, f.of, "count", record, f"{field}.of", role=role))
    q = run.outcome.quality
    if check.id == "quality_delta" and q is not None and q.perplexity is not None:
        out.append(fig("perplexity", q.perplexity, "perplexity", record, "outcome.quality.perplexity", role=role))
    for f in check.figures:
        if f.limit is not None and f.direction is not None:
            out.append(fig(LIMIT_QUANTITY[f.quantity], f.limit, f.unit, "gate policy", limit_field(check.id, f.quantity)))
    return out
