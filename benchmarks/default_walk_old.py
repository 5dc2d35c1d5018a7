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
    python benchmarks/default_walk_old.py --old /tmp/old7e [--rounds 5]
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
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    ensure_model(get_spec("minilm-l6"), lambda message: print(message, file=sys.stderr))
    old_tree = os.path.abspath(args.old)
    facts: dict[str, list[tuple[int, dict[str, float]]]] = {"new": [], "old": []}
    with tempfile.TemporaryDirectory() as tmp:
        new = Variant("default walk, this tree", walk(f"{tmp}/new"), tree(REPO))
        old = Variant("default walk, 7e8790a", walk(f"{tmp}/old"), tree(old_tree), old_tree)
        loads: list[float] = []
        for _ in range(args.rounds):  # one round at a time, so each bundle is read before the next walk replaces it
            loads += run_rounds([new, old] if len(new.seconds) % 2 == 0 else [old, new], 1)
            facts["new"].append(bundle_facts(Path(f"{tmp}/new")))
            facts["old"].append(bundle_facts(Path(f"{tmp}/old")))
    print(f"sparsedebug playbook run (embedded MiniLM pair, model cached), {args.rounds} interleaved rounds, fresh process each")
    print(table([old, new], old.name, rss=True))
    print(load_line(loads))
    for name, side in (("7e8790a", "old"), ("this tree", "new")):
        samples = int(np.median([n for n, _ in facts[side]]))
        steps = facts[side][0][1].keys()
        per_step = ", ".join(f"{step} {float(np.median([s[step] for _, s in facts[side]])):.1f}" for step in steps)
        print(f"{name}: candidate latency samples (median) {samples}; step seconds (median): {per_step}")
    ratio = float(np.median(new.seconds)) / float(np.median(old.seconds))
    verdict = "within" if ratio <= TARGET else "OVER"
    print(f"this tree / old: {ratio:.2f}x of the median wall time ({verdict} the {TARGET}x target)")


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
