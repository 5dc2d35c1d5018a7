"""Expected movement of a fix, from the candidate's own figures, and measured movement against a re-run."""

from __future__ import annotations

import pytest

from sparsedebug.records.classification import Fix
from sparsedebug.render.words.notes import say
from sparsedebug.signoff.movement import expected_latency, measure_movement
from tests.support.synth import dense_run, sparse_run


def _fix(**fields: object) -> Fix:
    """A proposed fix with the fields a test sets; text, metric, direction and rule filled in."""
    base: dict[str, object] = {"metric": "latency_p50_ms", "direction": "down", "rule": "test"}
    return Fix.model_validate(base | fields)


def test_conversion_fix_expects_the_per_call_conversion_time_back() -> None:
    cand = sparse_run(6.0)
    for lo in cand.lower.layers:
        if lo.path.value == "sparse":
            lo.conversions_per_call, lo.conversion_ms = 1, 0.75
    after, basis = expected_latency(cand, dense_run(5.0), _fix(kind="knob", knob="conversion", value="once"))
    assert after == pytest.approx(6.0 - 1.5)
    assert "2 layer(s), 1.500 ms" in say(basis)


@pytest.mark.parametrize("how", ["conversion", "removes"])
def test_a_saving_larger_than_the_forward_is_not_projected(how: str) -> None:
    """Conversions timed apart from the forward can sum past it under other load: no projection to 0 ms, a note saying why."""
    cand = sparse_run(6.0)
    for lo in cand.lower.layers:
        if lo.path.value == "sparse":
            lo.conversions_per_call, lo.conversion_ms = 1, 4.0  # two layers, 8 ms against a 6 ms forward
    fix = (_fix(kind="knob", knob="conversion", value="once") if how == "conversion"
           else _fix(kind="knob", knob="conversion", value="once", removes_ms=8.0, basis="conversion_time"))
    after, basis = expected_latency(cand, dense_run(5.0), fix)
    assert after is None and basis.code == "movement.saving_past_forward"
    assert "8.000 ms" in say(basis) and "more than the whole forward" in say(basis)


def test_scheduling_advice_expects_overhead_down_to_the_baseline() -> None:
    base, cand = dense_run(5.0), sparse_run(6.0)
    # synth: busy = sum of layer times; span = latency samples.
    base_over = 5.0 - (2.0 + 0.2 + 2.0)  # dense layers: busy 4.2 ms
    cand_over = 6.0 - (1.2 + 0.2 + 1.2)  # sparse layers: busy 2.6 ms
    after, basis = expected_latency(cand, base, _fix(kind="advice"))
    assert after == pytest.approx(6.0 - (cand_over - base_over), rel=1e-3)
    assert "down to the baseline's overhead" in say(basis)


def test_exclude_of_a_fallback_layer_expects_no_change_and_pad_expects_amdahl() -> None:
    cand = sparse_run(6.0, fallback=True)
    same, basis = expected_latency(cand, None, _fix(kind="layer", layer="l0.down", action="exclude"))
    assert same == pytest.approx(6.0) and "already runs dense" in say(basis)
    padded, basis = expected_latency(cand, None, _fix(kind="layer", layer="l0.down", action="pad"))
    s = 2.0 / 1.2  # measured sparse kernel speedup on l0.up
    assert padded == pytest.approx(6.0 - (2.0 - 2.0 / s))
    assert "Amdahl" in say(basis)
    cast, _ = expected_latency(cand, None, _fix(kind="layer", layer="l0.down", action="cast", value="fp16"))
    assert cast == pytest.approx(padded)


def test_measured_movement_and_verdict() -> None:
    base, cand, fixed = dense_run(5.0), sparse_run(6.0), sparse_run(4.0)
    moves, verdict, moved, target = measure_movement(base, cand, fixed, _fix(kind="advice", direction="down"))
    assert moved is True and target == "latency p50"
    assert verdict is not None and verdict.significant and verdict.ratio is not None and verdict.ratio < 1.0
    p50 = next(m for m in moves if m.metric == "latency p50")
    assert (p50.before, p50.after) == (pytest.approx(6.0), pytest.approx(4.0))
    speed = next(m for m in moves if m.metric.startswith("speedup"))
    assert speed.after == pytest.approx(5.0 / 4.0)
    _, _, unmoved, _ = measure_movement(base, cand, sparse_run(6.0), _fix(kind="advice"))
    assert unmoved is False


@pytest.mark.parametrize(("fallbacks", "action"), [(2, "pad"), (3, "cast"), (5, "pad")])
def test_a_fix_on_a_set_expects_the_summed_dense_time_of_every_member(fallbacks: int, action: str) -> None:
    """A pad or cast covering every layer that falls back for one reason projects Amdahl on all of them, not the first."""
    from sparsedebug.records.classification import FixTarget
    from sparsedebug.records.run import FallbackReason
    from tests.support.synth import L, make_run

    members = [f"l{i}.down" for i in range(fallbacks)]
    layers = [L("l0.up", intended="2:4", path="sparse", time_ms=1.2, dense_ms=2.0)]  # measured speedup 2.0 / 1.2
    layers += [L(name, intended="2:4", path="dense", reason="shape_not_aligned", time_ms=2.0 + 0.5 * i) for i, name in enumerate(members)]
    cand = make_run("wide", layers, 10.0)
    target = FixTarget(cause=FallbackReason.SHAPE_NOT_ALIGNED, layers=members)
    after, basis = expected_latency(cand, None, _fix(kind="layer", layer=members[-1], action=action, value="fp16", targets=[target]))
    dense = sum(2.0 + 0.5 * i for i in range(fallbacks))
    assert after == pytest.approx(10.0 - (dense - dense / (2.0 / 1.2)))
    assert f"the {fallbacks} layers' summed dense time {dense:.3f} ms" in say(basis)
    one, _ = expected_latency(cand, None, _fix(kind="layer", layer=members[-1], action=action, value="fp16"))
    assert one == pytest.approx(10.0 - (2.0 + 0.5 * (fallbacks - 1)) * (1 - 1.2 / 2.0))  # no set: that layer alone
