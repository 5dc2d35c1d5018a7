"""`bisect` on the shared trace pair against the bare imports of its libraries, and against the commit before (7e8790a).

Issue 57: ``bisect`` took 4-5x the bare ``python -c 'import typer, rich, pydantic, numpy,
yaml'``, most of it import time (pydantic built about two hundred record classes at import).
This runs the bare imports, ``bisect`` with this tree and ``bisect`` with an old commit's
worktree (``--old``), each in a fresh process, in interleaved rounds (the order rotating), and
prints p50/p95/p99 and each median's ratio to the bare imports' (target: at most 3x). Both
``bisect`` sides read the same traces and decide with the same samples.

Both trees are byte-compiled first (``compileall``, into their ``__pycache__``), as an installed package
is: the bare imports read the site-packages' bytecode, and with ``PYTHONDONTWRITEBYTECODE=1`` (set in
this project's environment) a tree never compiled would be compiled from source in every run, about a
fifth of ``bisect``'s time that no installed copy pays. ``--source`` leaves the trees as they are. Usage::

    git worktree add /tmp/old57 7e8790a
    python benchmarks/bisect_start.py --old /tmp/old57 [--rounds 11]
"""

from __future__ import annotations

import argparse
import compileall
import os

import numpy as np
from side_by_side import REPO, Variant, load_line, python, run_rounds, table, tree

TARGET = 3.0
PAIR = [os.path.join(REPO, "fixtures/h200", name) for name in ("trace_dense_T2048.json.gz", "trace_sparse_mlp_T2048.json.gz")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="worktree of the commit before this work (git worktree add DIR 7e8790a)")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--source", action="store_true", help="do not byte-compile the trees first (time them as they are)")
    args = parser.parse_args()
    old_tree = os.path.abspath(args.old)
    if not args.source:
        for root in (REPO, old_tree):
            if not compileall.compile_dir(os.path.join(root, "sparsedebug"), quiet=1):
                raise SystemExit(f"{root}: sparsedebug does not byte-compile")
    bisect = [python(), "-m", "sparsedebug", "bisect", *PAIR]
    bare = Variant("bare imports", [python(), "-c", "import typer, rich, pydantic, numpy, yaml"])
    new = Variant("bisect, this tree", bisect, tree(REPO))
    old = Variant("bisect, 7e8790a", bisect, tree(old_tree), old_tree)
    loads = run_rounds([bare, new, old], args.rounds)
    print(f"bisect on the H200 T2048 pair (fixtures/h200), {args.rounds} interleaved rounds, fresh process each; "
          + ("trees as they are (--source)" if args.source else "both trees byte-compiled first (compileall)"))
    print(table([bare, new, old], bare.name))
    print(load_line(loads))
    ratio = float(np.median(new.seconds)) / float(np.median(bare.seconds))
    verdict = "within" if ratio <= TARGET else "OVER"
    print(f"bisect, this tree: {ratio:.2f}x the bare imports ({verdict} the {TARGET:g}x target); "
          f"{float(np.median(new.seconds)) / float(np.median(old.seconds)):.2f}x the old commit's time")


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
