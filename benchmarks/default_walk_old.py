"""The embedded default walk against the commit before the speed work (7e8790a), side by side.

Issue 57's target: the default walk (``sparsedebug playbook run``, the real MiniLM pair) in at
most 0.7x the wall time of the commit before that work, on the same machine in the same run.
This walks it with this tree and with an old commit's worktree (``--old``, made by ``git
worktree add /tmp/old7e 7e8790a``), each time in a fresh process, in interleaved rounds (the
order rotating), and prints p50/p95/p99 of the wall time, each side's peak RSS and the ratio of
medians. Both sides replay the same embedded workloads (same repeats and tokens); so that a
speed-up is not bought with evidence, it prints what each side's bundles measured: the median
number of latency samples in candidate.run.json (the rounds its session settled on), and
each step's median seconds from bundle.json. The model is made sure to be cached first
(untimed). Usage::

    git worktree add /tmp/old7e 7e8790a
    python benchmarks/default_walk_old.py --old /tmp/old7e [--before DIR] [--rounds 5]

``--before`` adds a third tree (the merge before the walk read each input once and wrote
each file once, bc454a5) to show what that change alone is worth.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from side_by_side import REPO, Variant, load_line, python, run_rounds, table, tree

from sparsedebug.sources.models.cache import ensure_model
from sparsedebug.sources.models.registry import get_spec

TARGET = 0.7


def walk(out: str) -> list[str]:
    """The default walk's command line, writing (and replacing) the bundle ``out``."""
    return [python(), "-m", "sparsedebug", "playbook", "run", "-o", out, "--force"]


def bundle_facts(bundle: Path) -> tuple[int, dict[str, float]]:
    """The latency samples of the bundle's candidate run, and each step's seconds."""
    cand = json.loads((bundle / "candidate.run.json").read_text(encoding="utf-8"))
    manifest = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
    return len(cand["outcome"]["latency_samples_ms"]), {s["step"]: float(s["seconds"]) for s in manifest["steps"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="worktree of the commit before the speed work (git worktree add DIR 7e8790a)")
    parser.add_argument("--before", help="also a tree without the read-once walk (bc454a5, the merge before it), to show its share")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    ensure_model(get_spec("minilm-l6"), lambda message: print(message, file=sys.stderr))
    with tempfile.TemporaryDirectory() as tmp:
        trees = [("default walk, 7e8790a", os.path.abspath(args.old), "old"), ("default walk, this tree", REPO, "new")]
        if args.before:
            trees.insert(1, ("default walk, bc454a5 (before read-once)", os.path.abspath(args.before), "before"))
        variants = [Variant(name, walk(f"{tmp}/{out}"), tree(path), path) for name, path, out in trees]
        facts: dict[str, list[tuple[int, dict[str, float]]]] = {v.name: [] for v in variants}
        loads: list[float] = []
        for index in range(args.rounds):  # one round at a time, so each bundle is read before the next walk replaces it
            shift = index % len(variants)
            loads += run_rounds(variants[shift:] + variants[:shift], 1)
            for variant, (_, _, out) in zip(variants, trees, strict=True):
                facts[variant.name].append(bundle_facts(Path(f"{tmp}/{out}")))
    old, new = variants[0], variants[-1]
    print(f"sparsedebug playbook run (embedded MiniLM pair, model cached), {args.rounds} interleaved rounds, fresh process each")
    print(table(variants, old.name, rss=True))
    print(load_line(loads))
    for variant in variants:
        samples = int(np.median([n for n, _ in facts[variant.name]]))
        steps = facts[variant.name][0][1].keys()
        per_step = ", ".join(f"{step} {float(np.median([s[step] for _, s in facts[variant.name]])):.1f}" for step in steps)
        print(f"{variant.name}: candidate latency samples (median) {samples}; step seconds (median): {per_step}")
    ratio = float(np.median(new.seconds)) / float(np.median(old.seconds))
    verdict = "within" if ratio <= TARGET else "OVER"
    print(f"this tree / old: {ratio:.2f}x of the median wall time ({verdict} the {TARGET}x target)")


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
