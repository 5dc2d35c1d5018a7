"""Generated run sets: every rank of one job as its own trace, with a planted straggler or fallback.

Each rank is one ``tracegen`` trace (NCCL all-reduces in the backward, ``ncclDevKernel_*``) with
``distributedInfo`` at the top, as Kineto writes it. A straggler's layers run slower (it reaches
each collective late); a fallback rank runs its sparse MLP layers dense.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.support.tracegen import TraceSpec, generate, write_doc

SPARSE = frozenset({1, 2, 4, 5})
"""The layers a sparse rank runs on cuSPARSELt kernels."""


def write_rank_set(
    folder: Path, ranks: int, *, seed: int = 0, straggler: int | None = None, fallback: int | None = None,
    sparse: frozenset[int] = SPARSE, slow_factor: float = 1.6, distributed: bool = True, iterations: int = 4,
) -> list[Path]:
    """Write ``rank{r}.json`` for every rank into ``folder``; a planted ``straggler`` or ``fallback`` rank."""
    folder.mkdir(parents=True, exist_ok=True)
    base = TraceSpec(layers=6, iterations=iterations, sparse_layers=sparse, seed=seed, bucket=2, name="job")
    paths = []
    for rank in range(ranks):
        spec = replace(base, seed=seed * 1000 + rank, name=f"rank{rank}")
        if rank == straggler:
            spec = replace(spec, slow_layers=frozenset(range(spec.layers)), slow_factor=slow_factor)
        if rank == fallback:
            spec = replace(spec, sparse_layers=frozenset())
        doc, _ = generate(spec)
        if distributed:
            doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": ranks}
            doc = {"distributedInfo": doc.pop("distributedInfo"), **doc}
        path = folder / f"rank{rank}.json"
        write_doc(path, doc)
        paths.append(path)
    return paths
