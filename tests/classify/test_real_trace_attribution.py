"""Attribution on real-trace variations (issue 51): a headline only from a measured difference between the runs, a
baseline's own condition is not the change, copies are memory, shares past 100% say so, and a fix as wide as its
cause. Every pair is generated with ``tests.support.tracegen``, in several variants each.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, classify_json, invoke
from tests.support.tracegen import TraceSpec, generate, strip, write_doc

SMI = str(FIXTURES / "h200" / "nvidia_smi_short.csv")
SMALL = TraceSpec(layers=6, iterations=6, backward=False, optimizer=False, nccl=False, memcpy=False, streams=1, jitter=0.02)


def _write(path: Path, spec: TraceSpec) -> str:
    doc, _ = generate(spec)
    write_doc(path, doc)
    return str(path)


# --------------------------------------------------------------------------- no headline from the candidate alone


@pytest.mark.parametrize(("iterations", "hot", "smi"), [
    (30, (1.3, 1.5, 1.7), True),   # a hot tail, beside a clock log that cannot be aligned
    (30, (1.8, 1.9), False),       # two hot iterations, no clock log
    (40, (1.4, 1.6, 1.8, 2.0), True),
])
def test_a_tail_in_the_candidate_alone_is_no_headline_and_no_host_side_fix(
    tmp_path: Path, iterations: int, hot: tuple[float, ...], smi: bool,
) -> None:
    spec = replace(SMALL, iterations=iterations)
    base = _write(tmp_path / "cool.json", spec)
    scale = (1.0,) * (iterations - len(hot)) + hot
    cand = _write(tmp_path / "hot.json", replace(spec, seed=1, iteration_scale=scale))
    payload = classify_json(cand, base, *(("--smi", SMI) if smi else ()))
    tail = next(e for e in payload["evidence"] if e["rule"] == "scheduling.tail_spread")
    assert tail["fired"]  # the candidate's own tail is past the threshold ...
    host = next(e for e in payload["evidence"] if e["rule"] == "scheduling.host_wait")
    assert host["value"] is not None and host["value"] < 0.05  # ... and the device never waits on the host
    assert payload["winner"] is None and payload["fix"] is None and payload["established"] is False
    assert payload["settle"] == ("aligned_clock_log" if smi else None)
    text = invoke(["classify", cand, "--baseline", base, *(("--smi", SMI) if smi else ())])
    flat = " ".join(text.stdout.split())
    assert "not established: the rules that fired (`scheduling.tail_spread`) read the candidate alone" in flat
    assert "pin threads" not in flat and "CUDA graph" not in flat


# --------------------------------------------------------------------------- what the baseline shows too is not the change


@pytest.mark.parametrize(("gap_us", "candidate"), [
    (20_000.0, "cudnn"),    # attention fused in the candidate: fewer launches, less busy time, the same sleep
    (80_000.0, "flash"),
    (164_615.0, "cudnn"),   # the sleep between steps of the pair
])
def test_a_sleep_between_steps_in_both_runs_is_not_the_change(tmp_path: Path, gap_us: float, candidate: str) -> None:
    spec = replace(SMALL, step_gap_us=gap_us, attention="math")
    base = _write(tmp_path / "base.json", spec)
    cand = _write(tmp_path / "cand.json", replace(spec, seed=1, attention=candidate))
    payload = classify_json(cand, base)
    lines = {e["rule"]: e for e in payload["evidence"]}
    assert payload["winner"] != "scheduling" and (payload["fix"] is None or payload["fix"]["code"] != "cuda_graph")
    for rule in ("scheduling.span_vs_busy", "scheduling.per_call_overhead"):
        assert not lines[rule]["fired"] and lines[rule]["gate"]["code"] == "mechanisms.gate_baseline_shares"
        assert lines[rule]["value"] is not None and lines[rule]["baseline_fired"] is True  # the baseline's condition too


# --------------------------------------------------------------------------- copies are memory; same evidence, same stage


def _partly_annotated(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with the annotations of every odd block removed (a model where only some modules are wrapped)."""
    def odd_block(e: dict[str, Any]) -> bool:
        name = str(e.get("name", ""))
        return (e.get("cat") in ("user_annotation", "gpu_user_annotation") and name.startswith("layers.")
                and int(name.split(".")[1]) % 2 == 1)
    return {**doc, "traceEvents": [e for e in doc["traceEvents"] if not odd_block(e)]}


def _copy_pair(tmp_path: Path, blocks: int, kind: str, annotation: str) -> tuple[str, str]:
    """Attention kept on cuDNN; the candidate copies query, key and value (``.contiguous()``) before every call."""
    spec = replace(SMALL, layers=3 * blocks, attention="cudnn")
    paths = []
    for name, s in (("base", spec), ("cand", replace(spec, seed=1, attention_copies=3, copy_kernel=kind, copy_scale=10.0))):
        doc, _ = generate(s)
        if annotation == "stripped":
            doc = strip(doc, "no_annotations")  # type: ignore[assignment]
        elif annotation == "partly":
            doc = _partly_annotated(doc)
        paths.append(tmp_path / f"{name}-{annotation}.json")
        write_doc(paths[-1], doc)
    return str(paths[0]), str(paths[1])


COPY_VARIANTS = [(2, "elementwise"), (4, "memcpy"), (7, "elementwise")]


@pytest.mark.parametrize(("blocks", "kind"), COPY_VARIANTS)
@pytest.mark.parametrize("annotation", ["annotated", "stripped"])
def test_time_in_added_copy_kernels_is_memory_s_share(tmp_path: Path, blocks: int, kind: str, annotation: str) -> None:
    base, cand = _copy_pair(tmp_path, blocks, kind, annotation)
    payload = classify_json(cand, base)
    att = payload["attribution"]
    shares = {m["mechanism"]: m for m in att["mechanisms"]}
    copy = next(e for e in payload["evidence"] if e["rule"] == "memory.copy_time")
    assert copy["fired"]
    assert shares["memory"]["ms"] > 0.9 * att["delta_ms"]  # the copies are the change ...
    assert "compute" not in shares  # ... and no compute share without a compute cause
    assert payload["winner"] == "memory" and payload["established"] is True
    assert {p["rule"] for p in att["parts"] if p["mechanism"] == "memory"} == {"memory.copy_time"}


@pytest.mark.parametrize(("blocks", "kind"), COPY_VARIANTS)
def test_annotated_stripped_and_partly_annotated_copies_reach_the_same_stage(tmp_path: Path, blocks: int, kind: str) -> None:
    stages = {}
    for annotation in ("annotated", "stripped", "partly"):
        base, cand = _copy_pair(tmp_path, blocks, kind, annotation)
        out = tmp_path / f"{annotation}.bisect.json"
        result = invoke(["bisect", base, cand, "--json"])
        assert result.exit_code in (0, 1), result.stderr
        out.write_text(result.stdout)
        stages[annotation] = json.loads(result.stdout)["first_stage"]
    assert set(stages.values()) == {"lower"}, stages


# --------------------------------------------------------------------------- shares over 100%


def _over_pair(tmp_path: Path, variant: str) -> tuple[str, str]:
    """A change one mechanism carries while other layers got faster with no mechanism evidence (pulling the other way)."""
    spec = replace(SMALL, layers=12, attention="cudnn")
    if variant == "copies, one faster layer":
        cand = replace(spec, seed=1, attention_copies=3, copy_scale=10.0, slow_layers=frozenset({1}), slow_factor=0.5)
    elif variant == "device copies, two faster layers":
        cand = replace(spec, seed=1, attention_copies=3, copy_kernel="memcpy", copy_scale=12.0, slow_layers=frozenset({1, 4}),
                       slow_factor=0.6)
    else:  # attention onto the fp32 math path while every MLP layer got faster
        spec = replace(spec, attention="flash")
        cand = replace(spec, seed=1, attention="math", attention_noncontig_qkv=True,
                       slow_layers=frozenset(i for i in range(12) if i % 3), slow_factor=0.2)
    return _write(tmp_path / "base.json", spec), _write(tmp_path / "cand.json", cand)


@pytest.mark.parametrize("variant", ["copies, one faster layer", "device copies, two faster layers", "math path, faster MLP"])
def test_a_share_past_the_whole_change_says_it_over_explains_and_names_what_pulls_back(tmp_path: Path, variant: str) -> None:
    base, cand = _over_pair(tmp_path, variant)
    walk = invoke(["playbook", "run", "--baseline", base, "--candidate", cand, "--no-reduce", "-o", str(tmp_path / "b")])
    assert walk.exit_code == 0, walk.stderr
    cls = json.loads((tmp_path / "b" / "classification.json").read_text())
    top = cls["attribution"]["mechanisms"][0]
    assert top["share"] > 1.0 and cls["winner"] == top["mechanism"]
    memo = " ".join((tmp_path / "b" / "memo.md").read_text().split())
    pct = f"{100 * top['share']:.0f}%"
    assert f"({pct}) of the" not in memo  # never a bare share past 100% of the change
    assert f"more than the whole change ({pct}): time no mechanism carries" in memo and "the other way" in memo
    summary = " ".join(walk.stdout.split())
    assert f"({pct}, more than the whole change) of the" in summary
    assert top["against"][0] == "unattributed"  # the faster layers carry no mechanism evidence


# --------------------------------------------------------------------------- a fix as wide as its cause, in every consumer


@pytest.mark.parametrize("blocks", [2, 4, 7])
def test_every_consumer_of_a_fix_takes_the_whole_target_set(tmp_path: Path, blocks: int) -> None:
    spec = replace(SMALL, layers=3 * blocks, attention="flash")
    base = _write(tmp_path / "base.json", spec)
    cand = _write(tmp_path / "cand.json", replace(spec, attention="math", attention_noncontig_qkv=True, seed=1))
    out = tmp_path / "b"
    walk = invoke(["playbook", "run", "--baseline", base, "--candidate", cand, "-o", str(out)])
    assert walk.exit_code == 0, walk.stderr
    fix = json.loads((out / "classification.json").read_text())["fix"]
    [group] = fix["targets"]
    everyone = sorted(f"layers.{b}.self_attn.sdpa" for b in range(blocks))
    assert sorted(group["layers"]) == everyone and fix["removes_ms"] == pytest.approx(group["removes_ms"])
    summary = " ".join(walk.stdout.split())
    assert f"4 reproduce make the query, key and value of all {blocks} layers contiguous" in summary
    memo = " ".join((out / "memo.md").read_text().split())
    action = next(line for line in memo.split("- **") if line.startswith("Smallest reversible change"))
    assert f"of all {blocks} layers contiguous" in action and f"of `{fix['layer']}`" not in action
    assert f"Removes: {fix['removes_ms']:.3f} ms per iteration across all {blocks} layers" in action
    repro = json.loads((out / "trace_repro.json").read_text())
    assert sorted(repro["targets"]) == everyone and repro["targets_ms"] == pytest.approx(fix["removes_ms"])
    script = (out / "repro.py").read_text()
    assert f"STANDS_FOR = {group['layers']!r}" in script
    report = " ".join((out / "report.md").read_text().split())
    assert f"it stands for all {blocks} layers the fix covers" in report
