"""`bisect` on the shared trace pair against the bare imports of its libraries, and against the commit before (7e8790a).

Issue 57: ``bisect`` took 4-5x the bare ``python -c 'import typer, rich, pydantic, numpy,
yaml'``, most of it import time (pydantic built about two hundred record classes at import).
This runs the bare imports, ``bisect`` with this tree and ``bisect`` with an old commit's
worktree (``--old``), each in a fresh process, in interleaved rounds (the order rotating), and
prints p50/p95/p99 and each median's ratio to the bare imports' (target: at most 3x). Both
``bisect`` sides read the same traces and decide with the same samples. Usage::

    git worktree add /tmp/old57 7e8790a
    python benchmarks/bisect_start.py --old /tmp/old57 [--rounds 11]
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from side_by_side import REPO, Variant, load_line, python, run_rounds, table, tree

TARGET = 3.0
PAIR = [os.path.join(REPO, "fixtures/h200", name) for name in ("trace_dense_T2048.json.gz", "trace_sparse_mlp_T2048.json.gz")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="worktree of the commit before this work (git worktree add DIR 7e8790a)")
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    old_tree = os.path.abspath(args.old)
    bisect = [python(), "-m", "sparsedebug", "bisect", *PAIR]
    bare = Variant("bare imports", [python(), "-c", "import typer, rich, pydantic, numpy, yaml"])
    new = Variant("bisect, this tree", bisect, tree(REPO))
    old = Variant("bisect, 7e8790a", bisect, tree(old_tree), old_tree)
    loads = run_rounds([bare, new, old], args.rounds)
    print(f"bisect on the H200 T2048 pair (fixtures/h200), {args.rounds} interleaved rounds, fresh process each")
    print(table([bare, new, old], bare.name))
    print(load_line(loads))
    ratio = float(np.median(new.seconds)) / float(np.median(bare.seconds))
    verdict = "within" if ratio <= TARGET else "OVER"
    print(f"bisect, this tree: {ratio:.2f}x the bare imports ({verdict} the {TARGET:g}x target); "
          f"{float(np.median(new.seconds)) / float(np.median(old.seconds)):.2f}x the old commit's time")


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
