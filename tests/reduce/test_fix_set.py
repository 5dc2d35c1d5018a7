"""A replay's bounded fix is as wide as its cause (issue 51, item 1, for workloads): when the layers of one, two or
every block fall back for the same reason, the classification's fix names all of them, ``apply_fix`` pads, casts
or excludes every one (or none), the reducer records the set it reproduced, and a walk's fixed run, fix.json and
memo carry the set. Pairs are generated with ``tests.support.builders.llama_stack``: q/k/v left in fp32 (cast),
an FFN width that is not a multiple of 16 (pad), the FFN pruned 4:8 where cuSPARSELt runs 2:4 only (exclude).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest

from sparsedebug.classify.score import classify_run
from sparsedebug.core.patterns import fallback_cause_set
from sparsedebug.records.classification import Fix, FixTarget
from sparsedebug.records.notes import note
from sparsedebug.records.run import FallbackReason, KernelPath, KernelStage, OutcomeStage, RunRecord, RunSource, ScheduleStage
from sparsedebug.reduce.apply_fix import apply_fix, target_layers
from sparsedebug.reduce.reduce import reduce_workloads
from sparsedebug.render.words.notes import say
from sparsedebug.signoff.memo_results import layer_set
from sparsedebug.sources.replay.sources import graph_source
from sparsedebug.sources.workload.schema import Workload, save_workload
from tests.conftest import invoke
from tests.support.builders import llama_stack

Cause = Literal["cast", "pad", "exclude"]
HIDDEN, FFN, ODD_FFN = 64, 176, 168  # 168 is not a multiple of 16: cuSPARSELt refuses the shape
SMALL: dict[str, Any] = dict(hidden=HIDDEN, ffn=FFN, heads=4, sequence=16, sparsity="2:4", backend="h200-cusparselt",
                             precision="fp16", repeats=5, warmup=1)
REASON = {"cast": FallbackReason.DTYPE_UNSUPPORTED, "pad": FallbackReason.SHAPE_NOT_ALIGNED,
          "exclude": FallbackReason.PATTERN_NOT_COMPLIANT}
ROLES = {"cast": ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),
         "pad": ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"),
         "exclude": ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")}


def _overrides(cause: Cause, blocks: list[int]) -> dict[str, dict[str, Any]]:
    """The planted cause on the layers of ``blocks``."""
    out: dict[str, dict[str, Any]] = {}
    for i in blocks:
        if cause == "cast":
            out |= {f"layers.{i}.self_attn.{p}": {"dtype": "fp32"} for p in ("q_proj", "k_proj", "v_proj")}
        elif cause == "pad":
            out |= {f"layers.{i}.mlp.gate_proj": {"shape": [ODD_FFN, HIDDEN]}, f"layers.{i}.mlp.up_proj": {"shape": [ODD_FFN, HIDDEN]},
                    f"layers.{i}.mlp.down_proj": {"shape": [HIDDEN, ODD_FFN]}}
        else:
            out |= {f"layers.{i}.mlp.{p}": {"sparsity": "4:8"} for p in ("gate_proj", "up_proj", "down_proj")}
    return out


def _pair(cause: Cause, total: int, bad: list[int]) -> tuple[Workload, Workload]:
    good = llama_stack("good", blocks=total, **SMALL)
    return good, llama_stack("bad", blocks=total, overrides=_overrides(cause, bad), **SMALL)


def _members(cause: Cause, blocks: list[int]) -> list[str]:
    """The layers the planted cause makes fall back, in graph order."""
    return [f"layers.{i}.{role}" for i in blocks for role in ROLES[cause]]


def _static(workload: Workload) -> RunRecord:
    """Graph and lowering of a workload, untimed (what reduce's static probes see)."""
    graph, lower = graph_source(workload).static_stages()
    return RunRecord(name=workload.name, source=RunSource(kind="replay"), graph=graph, lower=lower, kernel=KernelStage(layers=[]),
                     schedule=ScheduleStage(span_samples_ms=[], busy_samples_ms=[]), outcome=OutcomeStage(latency_samples_ms=[]))


def _fixed_path(run: RunRecord, names: list[str]) -> dict[str, tuple[str, str | None]]:
    lower = {lo.name: (lo.path.value, lo.reason.value if lo.reason is not None else None) for lo in run.lower.layers}
    return {n: lower[n] for n in names}


# 1, 2 and all blocks of 2 to 4 for each cause (cast: 2 of 3, all of 3, all of 2: one fp32 block of three, or two of four,
# is precision's, whose fix is the workload-wide precision knob, which covers every layer anyway).
VARIANTS = [
    ("cast", 3, [0, 2]), ("cast", 3, [0, 1, 2]), ("cast", 2, [0, 1]),
    ("pad", 3, [2]), ("pad", 3, [0, 1]), ("pad", 4, [0, 1, 2, 3]),
    ("exclude", 2, [1]), ("exclude", 3, [0, 2]), ("exclude", 3, [0, 1, 2]),
]


@pytest.mark.parametrize(("cause", "total", "blocks"), VARIANTS)
def test_the_fix_covers_every_layer_that_falls_back_for_its_reason(cause: Cause, total: int, blocks: list[int]) -> None:
    good, bad = _pair(cause, total, blocks)
    members = _members(cause, blocks)
    bad_run = _static(bad)
    assert fallback_cause_set(bad_run, REASON[cause]) == members
    fix = classify_run(bad_run, baseline=_static(good)).fix
    assert fix is not None and fix.kind == "layer" and fix.action == cause
    assert fix.layer in members and [(t.cause, t.layers) for t in fix.targets] == [(REASON[cause], members)]

    fixed, how = apply_fix(bad, fix)
    assert fixed is not None and how.code == "targets.fix_set" and how.values["causes"] == [REASON[cause].value]
    changed, covered = how.values["layers"], how.values["covered"]
    assert isinstance(changed, list) and isinstance(covered, list) and sorted(changed + covered) == sorted(members)
    after = _fixed_path(_static(fixed), members)
    if cause == "exclude":
        assert after == {n: ("dense", "intended_dense") for n in members}
        assert [fixed.layer(n).sparsity for n in members] == ["dense"] * len(members)
    else:  # every member now takes the sparse path, not only the one the rule cited
        assert after == {n: ("sparse", None) for n in members}
    if cause == "cast":
        assert all(fixed.layer(n).dtype == "fp16" for n in members) and changed == members
    if cause == "pad":  # one padding per block widens gate and up and down's input together
        assert changed == [f"layers.{i}.mlp.gate_proj" for i in blocks]
        assert all(fixed.layer(f"layers.{i}.mlp.down_proj").shape == [HIDDEN, FFN] for i in blocks)
    untouched = [layer for layer in bad.layers if layer.name not in members]
    assert all(fixed.layer(layer.name) == layer for layer in untouched)  # one cause, one action: nothing else moves


@pytest.mark.parametrize("key", ["layers.1.mlp.down_proj", "layers.0.mlp.up_proj"])
def test_one_layer_alone_keeps_a_one_layer_fix(key: str) -> None:
    good = llama_stack("good", blocks=2, **SMALL)
    bad = llama_stack("bad", blocks=2, overrides={key: {"sparsity": "4:8"}}, **SMALL)
    fix = classify_run(_static(bad), baseline=_static(good)).fix
    assert fix is not None and fix.layer == key and fix.targets == []
    fixed, how = apply_fix(bad, fix)
    assert fixed is not None and how.code == "targets.fix_excluded" and how.values["layer"] == key
    assert [layer.name for layer in bad.layers if fixed.layer(layer.name) != layer] == [key]


def test_the_set_is_applied_whole_or_not_at_all() -> None:
    """A member that cannot take the action refuses the whole fix, named with its reason; nothing is half-applied."""
    _, bad = _pair("pad", 2, [0])
    members = ["layers.0.mlp.gate_proj", "layers.1.self_attn.sdpa"]  # the first pads; attention cannot be padded
    fix = Fix(kind="layer", layer=members[0], action="pad", rule="compute.fallback_flops", metric="latency_p50_ms",
              direction="down", code="pad_shape", targets=[FixTarget(cause=FallbackReason.SHAPE_NOT_ALIGNED, layers=members)])
    assert target_layers(fix) == members
    fixed, how = apply_fix(bad, fix)
    assert fixed is None and how.code == "targets.fix_set_refused" and how.values["layer"] == members[1]
    assert how.values["why_code"] == "targets.pad_not_sparse_linear"
    assert say(how) == ("the fix covers all 2 layers sharing the cause (shape_not_aligned) or none, and layers.1.self_attn.sdpa "
                        "refuses it: layers.1.self_attn.sdpa is not a sparse linear layer")


def test_the_set_note_names_each_member_and_what_an_earlier_padding_covered() -> None:
    text = say(note("targets.fix_set", action="pad", causes=["shape_not_aligned"], layers=["l0.gate"], dims=["out"], old=["168"],
                    new=["176"], covered=["l0.up", "l0.down"]))
    assert text == ("all 3 layers sharing the cause (shape_not_aligned): l0.gate padded out 168 -> 176; l0.up, l0.down covered by "
                    "that padding (now sparse)")


@pytest.mark.parametrize(("cause", "total", "blocks"), [("cast", 3, [1]), ("cast", 2, [0, 1]), ("exclude", 3, [0, 2])])
def test_the_reducer_records_every_layer_sharing_the_cause_it_reproduced(cause: Cause, total: int, blocks: list[int]) -> None:
    good, bad = _pair(cause, total, blocks)
    reduction = reduce_workloads(good, bad, probe_repeats=3, max_probes=40)
    red = reduction.record
    assert red.outcome == "reduced" and red.target_finding == f"fallback:{REASON[cause].value}"
    assert red.targets == _members(cause, blocks)  # the reproducer keeps one; it stands for all (in graph order)
    assert reduction.repro is not None and f"it stands for all {len(red.targets)} layers sharing that cause" in (reduction.repro.description or "")
    assert red.targets_ms is None  # a lowering finding is not timed
    assert red.layers_after is not None and red.layers_after < red.layers_before


def test_one_layer_or_a_graph_change_names_no_set() -> None:
    """A cause one layer shows is no set; nor is a graph-stage divergence (padded shapes: each layer's change is its own)."""
    good = llama_stack("good", blocks=2, **SMALL)
    bad = llama_stack("bad", blocks=2, overrides={"layers.0.self_attn.q_proj": {"dtype": "fp32"}}, **SMALL)
    red = reduce_workloads(good, bad, probe_repeats=3, max_probes=20).record
    assert red.target_finding == "fallback:dtype_unsupported" and red.targets == [] and red.targets_ms is None
    red = reduce_workloads(*_pair("pad", 2, [0, 1]), probe_repeats=3, max_probes=20).record
    assert (red.target_stage, red.target_finding, red.targets) == ("graph", "changed", [])


# --------------------------------------------------------------------------- weights converted on every call

PROJECTIONS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj",
               "mlp.down_proj")


def _conversion_pair(total: int, sparse: list[int]) -> tuple[Workload, Workload, list[str]]:
    """The blocks ``sparse`` pruned 2:4 (the rest dense); the candidate converts their weights on every call."""
    members = [f"layers.{i}.{p}" for i in sparse for p in PROJECTIONS]
    kw = {**SMALL, "sparsity": "dense", "overrides": {name: {"sparsity": "2:4"} for name in members}}
    return llama_stack("good", blocks=total, **kw), llama_stack("bad", blocks=total, conversion="per_call", **kw), members


@pytest.mark.parametrize(("total", "sparse"), [(3, [1]), (3, [0, 2]), (3, [0, 1, 2])])
def test_a_convert_once_fix_names_every_layer_converting_on_every_call(total: int, sparse: list[int]) -> None:
    good, bad, members = _conversion_pair(total, sparse)
    fix = classify_run(_static(bad), baseline=_static(good)).fix
    assert fix is not None and (fix.kind, fix.knob, fix.value) == ("knob", "conversion", "once")
    assert [(t.cause, t.layers) for t in fix.targets] == [("per_call_conversion", members)]
    fixed, how = apply_fix(bad, fix)
    assert fixed is not None and how.values["layers"] == members
    assert say(how).startswith(f"conversion per_call -> once (all {len(members)} layers it covers: {members[0]}, ")
    assert [lo.name for lo in _static(fixed).lower.layers if lo.conversions_per_call > 0] == []  # the knob covers them all
    red = reduce_workloads(good, bad, probe_repeats=3, max_probes=20).record
    assert red.target_finding == "per_call_conversion" and sorted(red.targets) == sorted(members)


# --------------------------------------------------------------------------- the walk: fixed run, fix.json, memo


@pytest.mark.parametrize(("cause", "total", "blocks"), [("pad", 3, [1]), ("exclude", 3, [0, 2]), ("cast", 2, [0, 1])])
def test_a_walk_fixes_the_whole_set_and_its_records_say_so(tmp_path: Path, cause: Cause, total: int, blocks: list[int]) -> None:
    good, bad = _pair(cause, total, blocks)
    paths = []
    for workload in (good, bad):
        paths.append(tmp_path / f"{workload.name}.yaml")
        save_workload(workload, paths[-1])
    out = tmp_path / "bundle"
    walk = invoke(["playbook", "run", "--baseline", str(paths[0]), "--candidate", str(paths[1]), "-o", str(out)])
    assert walk.exit_code == 0, walk.stderr
    members = _members(cause, blocks)

    def load(name: str) -> Any:
        return json.loads((out / name).read_text())

    fix = load("fix.json")
    assert fix["applied"] and [t["layers"] for t in fix["proposed"]["targets"]] == [members]
    assert fix["how"]["code"] == "targets.fix_set"
    assert sorted(fix["how"]["values"]["layers"] + fix["how"]["values"]["covered"]) == sorted(members)
    # the fixed run: every layer of the set changed path, not only the one the rule cited
    fixed = {lo["name"]: lo for lo in load("fixed.run.json")["lower"]["layers"]}
    cand = {lo["name"]: lo for lo in load("candidate.run.json")["lower"]["layers"]}
    assert all(cand[n]["path"] == KernelPath.DENSE.value and cand[n]["reason"] == REASON[cause].value for n in members)
    want = ("dense", "intended_dense") if cause == "exclude" else ("sparse", None)
    assert {n: (fixed[n]["path"], fixed[n].get("reason")) for n in members} == {n: want for n in members}
    red = load("reduce.json")  # a padded shape diverges at the graph stage first: no shared cause there
    assert sorted(red["targets"]) == ([] if cause == "pad" else sorted(members))
    memo = " ".join((out / "memo.md").read_text().split())
    assert f"all {len(members)} layers" in memo
    assert all(f"`{name}`" in memo for name in layer_set(members))  # the set written once: `layers.[0,2].mlp.up_proj`
    report = " ".join((out / "report.md").read_text().split())
    assert (f"it stands for all {len(members)} layers sharing that cause" in report) is (cause != "pad")
    assert f"Applied: all {len(members)} layers sharing the cause ({REASON[cause].value})" in report
    summary = " ".join(walk.stdout.split())
    assert f"all {len(members)} layers" in summary


def test_a_walk_converting_every_call_in_two_blocks_fixes_and_names_them_all(tmp_path: Path) -> None:
    good, bad, members = _conversion_pair(3, [0, 2])
    paths = [tmp_path / "good.yaml", tmp_path / "bad.yaml"]
    save_workload(good, paths[0])
    save_workload(bad, paths[1])
    out = tmp_path / "bundle"
    walk = invoke(["playbook", "run", "--baseline", str(paths[0]), "--candidate", str(paths[1]), "-o", str(out)])
    assert walk.exit_code == 0, walk.stderr
    fix = json.loads((out / "fix.json").read_text())
    assert fix["how"]["code"] == "targets.fix_knob" and fix["how"]["values"]["layers"] == members
    cand = {lo["name"]: lo for lo in json.loads((out / "candidate.run.json").read_text())["lower"]["layers"]}
    fixed = {lo["name"]: lo for lo in json.loads((out / "fixed.run.json").read_text())["lower"]["layers"]}
    assert all(cand[n]["conversions_per_call"] > 0 and fixed[n]["conversions_per_call"] == 0 for n in members)
    memo = " ".join((out / "memo.md").read_text().split())
    assert "convert the weights once at load instead of on every call; applied in the re-run." in memo
    layers = memo.split("Layers:", 1)[1].split("Owner:", 1)[0]
    assert sorted(layers.split("`")[1::2]) == sorted(layer_set(members))  # every block of the set, once


@pytest.mark.parametrize("blocks", [[1], [0, 2]])
def test_the_reduce_command_says_the_reproducer_stands_for_the_set(tmp_path: Path, blocks: list[int]) -> None:
    good, bad = _pair("exclude", 3, blocks)
    save_workload(good, tmp_path / "good.yaml")
    save_workload(bad, tmp_path / "bad.yaml")
    result = invoke(["reduce", str(tmp_path / "good.yaml"), str(tmp_path / "bad.yaml"), "-o", str(tmp_path / "r.yaml")])
    assert result.exit_code == 0, result.stderr
    members = _members("exclude", blocks)
    assert f"it stands for all {len(members)} layers sharing that cause" in " ".join(result.stdout.split())
    assert f"it stands for all {len(members)} layers" in (tmp_path / "r.yaml").read_text()
