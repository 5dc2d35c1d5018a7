"""Write trace directories for ``benchmarks/corpus.py``: the H200 traces, variations of them, synthetic ones.

Each directory holds traces whose consecutive pairs (sorted by name) are
meaningful baseline -> candidate pairs::

    OUT/h200/        the four shared H200 traces (dense -> sparse, eager and CUDA graph)
    OUT/variations/  the eager dense -> sparse pair with annotations, flows or shapes
                     stripped, events shuffled, or written as a bare event array
    OUT/synthetic/   generated training loops: dense -> 2:4 with per-call host cost,
                     dense -> one slow layer, many calls per layer (624 per run),
                     several streams, memcpy-heavy, no annotations
    OUT/adversarial/ one iteration, zero-duration ops, a second GPU, a layer removed,
                     GPU events only, identical traces; empty, truncated, not a trace
    OUT/large/       a generated pair of about --events events each (default 200k)
    OUT/large_calls/ a 200k-event pair where one layer has 15,000 calls per run
                     (past the 10,000-sample cap of the rank test)

Usage::

    python benchmarks/make_corpus.py OUT [--events 200000] [--skip-large]
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.tracegen import (
    VARIATIONS,
    TraceSpec,
    generate,
    read_doc,
    spec_for_events,
    strip,
    write_doc,
    write_trace,
)

H200 = REPO / "fixtures" / "h200"


def h200(out: Path) -> None:
    """The shared traces, named so that sorting gives dense -> sparse pairs."""
    out.mkdir(parents=True, exist_ok=True)
    for index, stem in enumerate(("dense_T2048", "sparse_mlp_T2048", "dense_T2048_cudagraph", "sparse_mlp_T2048_cudagraph")):
        shutil.copyfile(H200 / f"trace_{stem}.json.gz", out / f"{index}_{stem}.json.gz")


def variations(out: Path) -> None:
    """Each variation of the eager dense -> sparse pair, as two consecutive files."""
    out.mkdir(parents=True, exist_ok=True)
    docs = {side: read_doc(H200 / f"trace_{stem}.json.gz") for side, stem in (("a_dense", "dense_T2048"), ("b_sparse", "sparse_mlp_T2048"))}
    for variation in VARIATIONS:
        for side, doc in docs.items():
            write_doc(out / f"{variation}_{side}.json.gz", strip(doc, variation, seed=1))


def synthetic(out: Path) -> None:
    """Small generated training pairs, each a planted cause."""
    out.mkdir(parents=True, exist_ok=True)
    base = TraceSpec(layers=12, iterations=6, seed=1)
    pairs = {
        "1_sparse_host": (base, replace(base, sparse_layers=frozenset({0, 1, 3, 4, 6, 7}), sparse_host_us=400.0, seed=2)),
        "2_slow_layer": (base, replace(base, slow_layers=frozenset({5}), slow_factor=1.6, seed=3)),
        "3_many_calls": (replace(base, layers=3, calls=104, iterations=6, hidden=512, tokens=512), replace(base, layers=3, calls=104, iterations=6, hidden=512, tokens=512, kernel_scale=1.3, seed=4)),
        "4_streams_copies": (replace(base, streams=4, copies_per_call=3), replace(base, streams=1, copies_per_call=3, seed=5)),
        "5_no_annotations": (replace(base, annotations=False, record_shapes=False), replace(base, annotations=False, record_shapes=False, kernel_scale=1.25, seed=6)),
    }
    for name, (a, b) in pairs.items():
        write_trace(out / f"{name}_a.json.gz", replace(a, name=f"{name}_a"))
        write_trace(out / f"{name}_b.json.gz", replace(b, name=f"{name}_b"))


def _edited(out: Path, name: str, spec: TraceSpec, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
    doc, _ = generate(spec)
    doc["traceEvents"] = edit(doc["traceEvents"])
    write_doc(out / name, doc)


def _zero_durations(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for e in events:
        if e.get("cat") == "gpu_memset" or (e.get("cat") == "kernel" and "reduce_kernel" in e["name"]):
            e["dur"] = 0.0
    return events


def _second_gpu(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    copies = [{**e, "pid": 1, "args": {**e["args"], "device": 1, "correlation": e["args"]["correlation"] + 10**6}} for e in events if e.get("cat") == "kernel"]
    return events + copies


def _gpu_only(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]


def adversarial(out: Path) -> None:
    """Edge cases: every command must answer (exit 0/1) or refuse cleanly (exit 2), never crash."""
    out.mkdir(parents=True, exist_ok=True)
    small = TraceSpec(layers=4, iterations=5)
    write_trace(out / "1_one_iter_a.json.gz", replace(small, iterations=1, seed=1))
    write_trace(out / "1_one_iter_b.json.gz", replace(small, iterations=1, seed=2, kernel_scale=1.5))
    for side, seed in (("a", 3), ("b", 4)):
        _edited(out, f"2_zero_dur_{side}.json.gz", replace(small, seed=seed), _zero_durations)
        _edited(out, f"3_two_gpus_{side}.json.gz", replace(small, seed=seed), _second_gpu)
        _edited(out, f"5_gpu_only_{side}.json.gz", replace(small, seed=seed), _gpu_only)
    write_trace(out / "4_fewer_layers_a.json.gz", replace(small, layers=6, seed=7))
    write_trace(out / "4_fewer_layers_b.json.gz", replace(small, seed=8))
    write_trace(out / "6_same_a.json.gz", replace(small, iterations=2, seed=11))
    write_trace(out / "6_same_b.json.gz", replace(small, iterations=2, seed=11))
    (out / "7_empty.json").write_text("", encoding="utf-8")
    raw = gzip.decompress((out / "6_same_a.json.gz").read_bytes())
    (out / "7_truncated.json.gz").write_bytes(gzip.compress(raw[: len(raw) // 2]))
    (out / "7_zz_not_trace.json").write_text('{"hello": 1}\n', encoding="utf-8")


def large_calls(out: Path) -> None:
    """One layer called 1,500 times per step for 10 steps: 15,000 samples per side, about 200k events."""
    out.mkdir(parents=True, exist_ok=True)
    spec = TraceSpec(layers=1, calls=1500, iterations=10, backward=False, optimizer=False, nccl=False, hidden=1024, tokens=1024, seed=21)
    write_trace(out / "a_15k_calls.json.gz", spec)
    write_trace(out / "b_15k_calls.json.gz", replace(spec, sparse_layers=frozenset({0}), sparse_host_us=30.0, seed=22))


def large(out: Path, events: int) -> None:
    """One dense -> 2:4 training pair of about ``events`` events each."""
    out.mkdir(parents=True, exist_ok=True)
    spec = spec_for_events(events, layers=24, calls=2, seed=11)
    cand = replace(spec, sparse_layers=frozenset(range(0, 24, 2)), sparse_host_us=200.0, seed=12)
    for name, s in (("a_dense", spec), ("b_sparse", cand)):
        truth = write_trace(out / f"{name}_{events // 1000}k.json.gz", replace(s, name=name))
        print(f"{out.name}/{name}: {truth.events} events, {s.iterations} iterations", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--skip-large", action="store_true")
    args = parser.parse_args()
    h200(args.out / "h200")
    variations(args.out / "variations")
    synthetic(args.out / "synthetic")
    adversarial(args.out / "adversarial")
    if not args.skip_large:
        large(args.out / "large", args.events)
        large_calls(args.out / "large_calls")


if __name__ == "__main__":
    main()
