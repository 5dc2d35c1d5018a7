"""Expected and measured movement of a bounded fix (step 4 closing the loop).

``expected_latency`` estimates, from the candidate's own record, what the
candidate's p50 latency should become under the proposed fix, and says which
recorded figures the estimate stands on. ``measure_movement`` then compares the
candidate with the re-run fixed candidate: p50/p95/p99, speedup over the baseline,
and the fix's own metric where the record has it, plus a rank-test verdict on
the latency samples. Pure functions over records; nothing is timed here.
"""

from __future__ import annotations

from sparsedebug.core.stats import median, percentiles
from sparsedebug.locate.reference import session_block
from sparsedebug.records.bundle import Movement
from sparsedebug.records.classification import Fix
from sparsedebug.records.gate import GateTest
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import KernelPath, RunRecord
from sparsedebug.records.stats import DEFAULT_ALPHA, DEFAULT_MIN_EFFECT, Direction, JudgementRule
from sparsedebug.signoff.gate import judge_shift
from sparsedebug.signoff.metrics import fallback_summary, layer_rows, p50_speedup


def _overhead_p50(run: RunRecord) -> float | None:
    span, busy = run.schedule.span_samples_ms, run.schedule.busy_samples_ms
    if not span or not busy:
        return None
    n = min(len(span), len(busy))
    return median([s - b for s, b in zip(span[:n], busy[:n], strict=True)])


def expected_latency(cand: RunRecord, base: RunRecord | None, fix: Fix | None) -> tuple[float | None, Note]:
    """Expected candidate p50 latency (ms) after ``fix``, and the basis of the estimate (a note: its figures, or why none)."""
    samples = cand.outcome.latency_samples_ms
    if not samples or fix is None:
        return None, note("movement.no_samples_or_fix")
    p50 = median(samples)
    kind, knob, layer, action = fix.kind, fix.knob, fix.layer, fix.action
    if fix.removes_ms is not None and fix.basis is not None:
        if fix.removes_ms > p50:  # a part of the forward larger than the forward: timed apart, under other load
            return None, note("movement.saving_past_forward", p50_ms=p50, saving_ms=fix.removes_ms, basis=fix.basis)
        layers = sorted({name for t in fix.targets for name in t.layers})
        return max(p50 - fix.removes_ms, 0.0), note(
            "movement.fix_removes", p50_ms=p50, removes_ms=fix.removes_ms, basis=fix.basis, layers=len(layers) or 1
        )
    rows = {r.name: r for r in layer_rows(cand)}
    if kind == "knob" and knob == "conversion":
        per_call = [
            (lo.name, (lo.conversion_ms or 0.0) * lo.conversions_per_call)
            for lo in cand.lower.layers
            if lo.conversions_per_call > 0 and lo.conversion_ms is not None
        ]
        if not per_call:
            return None, note("movement.no_conversion_time")
        cost = sum(c for _, c in per_call)
        if cost > p50:  # the conversions were timed apart from the forward (under other load they can sum past it)
            return None, note("movement.saving_past_forward", p50_ms=p50, saving_ms=cost, basis="conversion_time")
        overhead = _overhead_p50(cand)
        base_overhead = _overhead_p50(base) if base is not None else None
        growth = overhead - base_overhead if overhead is not None and base_overhead is not None else None
        upper = growth is not None and growth > cost
        return max(p50 - cost, 0.0), note(
            "movement.conversion", p50_ms=p50, layers=len(per_call), cost_ms=cost,
            growth_ms=growth if upper else None, reach_ms=max(p50 - growth, 0.0) if upper and growth is not None else None,
        )
    if kind == "layer" and isinstance(layer, str) and layer in rows:
        row = rows[layer]
        # every layer the fix covers (its set, when it names one) that runs dense and was timed
        dense = [rows[n].time_ms for n in ([n for t in fix.targets for n in t.layers] or [layer])
                 if n in rows and rows[n].path == KernelPath.DENSE.value]
        if action in ("pad", "cast") and row.path == KernelPath.DENSE.value and row.time_ms is not None:
            fb = fallback_summary(cand)
            s = fb.sparse_kernel_speedup
            if s is None or s <= 0:
                return None, note("movement.no_sparse_speedup", layer=layer)
            dense_ms = sum(ms for ms in dense if ms is not None)
            saved = dense_ms - dense_ms / s
            source = fb.sparse_kernel_speedup_source
            return p50 - saved, note(
                "movement.layer_to_sparse", p50_ms=p50, layer=layer, dense_ms=dense_ms, speedup=s, saved_ms=saved, layers=len(dense),
                source=source.code if source is not None else None,
                **({f"source_{k}": v for k, v in source.values.items()} if source is not None else {}),
            )
        if action == "exclude":
            if row.path == KernelPath.DENSE.value:
                return p50, note("movement.already_dense", layer=layer, p50_ms=p50)
            if row.time_ms is not None and row.dense_time_ms is not None:
                delta = row.time_ms - row.dense_time_ms
                return p50 - delta, note(
                    "movement.exclude_layer", p50_ms=p50, layer=layer, sparse_ms=row.time_ms, dense_ms=row.dense_time_ms, delta_ms=delta
                )
    overhead = _overhead_p50(cand)
    if kind in ("knob", "advice") and (knob in (None, "threads")) and overhead is not None:
        base_overhead = _overhead_p50(base) if base is not None else None
        keep = base_overhead if base_overhead is not None else 0.0
        keep = min(keep, overhead)
        return p50 - (overhead - keep), note(
            "movement.schedule_overhead", p50_ms=p50, overhead_ms=overhead, keep_ms=keep, baseline=base_overhead is not None
        )
    return None, note("movement.no_projection", kind=kind)


def _max_rel_err(run: RunRecord) -> float | None:
    errs = [r.rel_err for r in layer_rows(run) if r.rel_err is not None]
    return max(errs) if errs else None


def _metadata_ratio(run: RunRecord) -> float | None:
    meta = sum(lo.metadata_bytes or 0 for lo in run.lower.layers if lo.path == KernelPath.SPARSE)
    vals = sum(lo.value_bytes or 0 for lo in run.lower.layers if lo.path == KernelPath.SPARSE)
    return meta / vals if vals else None


def _projected_direction(before: float, expected_after: float | None, factor: float) -> Direction | None:
    """Which way a projection moves a latency: faster or slower beyond ``factor`` (the shift test's), else same."""
    if expected_after is None or not before > 0:
        return None
    ratio = expected_after / before
    return "slower" if ratio >= factor else ("faster" if ratio <= 1.0 / factor else "same")


def _evidence_movements(cand: RunRecord, fixed: RunRecord) -> list[Movement]:
    """Candidate versus fixed on the metrics besides latency that both runs carry: error, fallbacks, metadata, quality."""
    moves: list[Movement] = []
    c_err, f_err = _max_rel_err(cand), _max_rel_err(fixed)
    if c_err is not None and f_err is not None and c_err > 0:
        moves.append(Movement(metric="worst layer rel err vs fp64", unit="", before=c_err, after=f_err, better="lower"))
    c_fb, f_fb = fallback_summary(cand), fallback_summary(fixed)
    if c_fb.rate is not None and f_fb.rate is not None:
        moves.append(Movement(metric="fallback rate", unit="", before=c_fb.rate, after=f_fb.rate, better="lower"))
    c_md, f_md = _metadata_ratio(cand), _metadata_ratio(fixed)
    if c_md is not None and f_md is not None:
        moves.append(Movement(metric="metadata / value bytes", unit="", before=c_md, after=f_md, better="lower"))
    if cand.outcome.quality is not None and fixed.outcome.quality is not None:
        moves.append(
            Movement(metric="output cosine vs dense", unit="", before=cand.outcome.quality.cosine,
                     after=fixed.outcome.quality.cosine, better="higher")
        )
    return moves


def measure_movement(
    base: RunRecord,
    cand: RunRecord,
    fixed: RunRecord,
    fix: Fix | None,
    *,
    alpha: float = DEFAULT_ALPHA,
    factor: float = DEFAULT_MIN_EFFECT,
    session_cand: RunRecord | None = None,
) -> tuple[list[Movement], GateTest | None, bool | None, str | None]:
    """Candidate versus fixed: latency percentiles, speedup over the baseline, the fix's metric.

    Returns the movements, the rank-test verdict on the latency samples (or None
    without samples), whether the fix's target metric moved the right way
    (latency significantly faster unless the fix targets error, metadata or
    fallbacks; None when it cannot be decided), that target's name, and whether the
    verdict compares the session's candidate (below).
    ``session_cand``: the candidate replayed again in one interleaved session with
    ``fixed`` (``replay_pair``); the verdict then compares those two round by round
    (drift during the session cancels) and says so; the movements stay the bundle's
    candidate against the fixed run. (The verdict's text is judge_shift's.)
    """
    moves: list[Movement] = []
    rule = JudgementRule(alpha=alpha, factor=factor)
    c_lat, f_lat = cand.outcome.latency_samples_ms, fixed.outcome.latency_samples_ms
    verdict: GateTest | None = None
    moved: bool | None = None
    target: str | None = None
    if c_lat and f_lat:
        cp, fp = percentiles(c_lat), percentiles(f_lat)
        exp_after, basis = expected_latency(cand, base, fix)
        p50_index = len(moves)
        moves.append(
            Movement(metric="latency p50", unit="ms", before=cp.p50, after=fp.p50, expected_after=exp_after,
                     expected_basis=basis, better="lower", expected_direction=_projected_direction(cp.p50, exp_after, factor))
        )
        moves.append(Movement(metric="latency p95", unit="ms", before=cp.p95, after=fp.p95, better="lower"))
        moves.append(Movement(metric="latency p99", unit="ms", before=cp.p99, after=fp.p99, better="lower"))
        if base.outcome.latency_samples_ms:
            b50 = median(base.outcome.latency_samples_ms)
            expected_speedup = b50 / exp_after if exp_after else None
            # the one speedup the gate and the memo state (paired when timed in one session with the baseline)
            before, after = p50_speedup(base, cand), p50_speedup(base, fixed)
            assert before is not None and after is not None  # every side has samples here
            moves.append(
                Movement(metric="speedup over baseline (p50)", unit="x", before=before, after=after,
                         expected_after=expected_speedup,
                         expected_basis=note("movement.speedup_expected") if expected_speedup else None,
                         better="higher")
            )
        block = session_block(session_cand, fixed) if session_cand is not None else None
        if session_cand is not None and block is not None:
            direction, verdict = judge_shift(session_cand.outcome.latency_samples_ms, f_lat, rule=rule, block=block)
        else:
            direction, verdict = judge_shift(c_lat, f_lat, rule=rule)
        moves[p50_index] = moves[p50_index].model_copy(update={"direction": None if direction == "inconclusive" else direction})
        moved = None if direction == "inconclusive" else direction == "faster"
        target = "latency p50"
    moves += _evidence_movements(cand, fixed)
    metric = fix.metric if fix is not None else ""
    own = {"rel_err": "worst layer rel err vs fp64", "metadata": "metadata / value bytes", "fallback": "fallback rate"}
    for key, label in own.items():
        if key in metric:
            match = [m for m in moves if m.metric == label]
            # The fix targets a non-latency metric: it moved when that metric improved.
            moved = (match[0].after < match[0].before) if match else None
            target = label if match else None
    return moves, verdict, moved, target
