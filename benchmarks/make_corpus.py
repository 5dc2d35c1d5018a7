"""Write trace directories for ``benchmarks/corpus.py``: the H200 traces, variations of them, synthetic ones.

Each directory holds traces whose consecutive pairs (sorted by name) are
meaningful baseline -> candidate pairs::

    OUT/h200/        the four shared H200 traces (dense -> sparse, eager and CUDA graph)
    OUT/variations/  the eager dense -> sparse pair with annotations, flows or shapes
                     stripped, events shuffled, or written as a bare event array
    OUT/synthetic/   generated training loops: dense -> 2:4 with per-call host cost,
                     dense -> one slow layer, many calls per layer (624 per run),
                     several streams, memcpy-heavy, no annotations
    OUT/large/       a generated pair of about --events events each (default 200k)

Usage::

    python benchmarks/make_corpus.py OUT [--events 200000] [--skip-large]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.tracegen import (
    VARIATIONS,
    TraceSpec,
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
    if not args.skip_large:
        large(args.out / "large", args.events)


if __name__ == "__main__":
    main()
