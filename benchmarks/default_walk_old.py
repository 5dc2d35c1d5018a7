"""The embedded default walk against an older commit's (issue 57: 1453309), side by side.

Issue 57's target: the default walk (``sparsedebug playbook run``, the real MiniLM pair) in at
most 0.7x the wall time of 1453309, the commit before that issue's work, on the same machine
in the same run. This walks it with this tree and with an old commit's worktree (``--old``, made
by ``git worktree add --detach /tmp/old1453 1453309``), each time in a fresh process, in
interleaved rounds (the order rotating), and prints p50/p95/p99 of the wall time, each side's
peak RSS, the ratio of medians and the load average at each run's start. Both sides replay the
same embedded workloads (same repeats and tokens); so that a speed-up is not bought with
evidence, it prints what each side's bundles measured: the median number of latency samples of
the candidate and of the fixed run (the rounds their sessions settled on), the decision of every
walk, each step's median seconds from bundle.json (where each change shows: the quality of a
variant evaluated once per walk in locate, reproduce and rerun, locate's candidate reused in
rerun), and which candidate each of this tree's fixed runs was judged against (``fix.json``'s
``pairing``: ``locate``, or ``fresh`` when the machine drifted; the old tree always replays a
fresh one). The model is made sure to be cached first (untimed). Usage::

    git worktree add --detach /tmp/old1453 1453309
    python benchmarks/default_walk_old.py --old /tmp/old1453 [--before DIR] [--rounds 5]

``--before`` adds a third tree (any other commit's worktree) to show what the changes between
it and this tree are worth.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from side_by_side import REPO, Variant, load_line, python, run_rounds, table, tree

from sparsedebug.sources.models.cache import ensure_model
from sparsedebug.sources.models.registry import get_spec

TARGET = 0.7


def walk(out: str) -> list[str]:
    """The default walk's command line, writing (and replacing) the bundle ``out``."""
    return [python(), "-m", "sparsedebug", "playbook", "run", "-o", out, "--force"]


@dataclass(frozen=True)
class Facts:
    """What one walk's bundle measured and decided."""

    candidate_samples: int
    fixed_samples: int
    decision: str
    # Which candidate the fixed run was judged against: locate, fresh, or "fresh (always)" for a tree without the choice.
    pairing: str
    steps: dict[str, float]


def bundle_facts(bundle: Path) -> Facts:
    """The latency samples of the bundle's candidate and fixed runs, its decision, its pairing and each step's seconds."""

    def read(name: str) -> Any:
        return json.loads((bundle / name).read_text(encoding="utf-8"))

    pairing = read("fix.json").get("pairing")
    return Facts(
        candidate_samples=len(read("candidate.run.json")["outcome"]["latency_samples_ms"]),
        fixed_samples=len(read("fixed.run.json")["outcome"]["latency_samples_ms"]),
        decision=read("decision.json")["decision"],
        pairing=pairing["candidate"] if pairing else "fresh (always)",
        steps={s["step"]: float(s["seconds"]) for s in read("bundle.json")["steps"]},
    )


def commit(path: str) -> str:
    """The short commit a worktree is at."""
    return subprocess.run(["git", "-C", path, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="worktree of the commit before the speed work (git worktree add --detach DIR 1453309)")
    parser.add_argument("--before", help="also another commit's worktree, to show what the changes since it are worth")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    ensure_model(get_spec("minilm-l6"), lambda message: print(message, file=sys.stderr))
    with tempfile.TemporaryDirectory() as tmp:
        old = os.path.abspath(args.old)
        trees = [(f"default walk, {commit(old)}", old, "old"), ("default walk, this tree", REPO, "new")]
        if args.before:
            before = os.path.abspath(args.before)
            trees.insert(1, (f"default walk, {commit(before)}", before, "before"))
        variants = [Variant(name, walk(f"{tmp}/{out}"), tree(path), path) for name, path, out in trees]
        facts: dict[str, list[Facts]] = {v.name: [] for v in variants}
        loads: list[float] = []
        for index in range(args.rounds):  # one round at a time, so each bundle is read before the next walk replaces it
            shift = index % len(variants)
            loads += run_rounds(variants[shift:] + variants[:shift], 1)
            for variant, (_, _, out) in zip(variants, trees, strict=True):
                facts[variant.name].append(bundle_facts(Path(f"{tmp}/{out}")))
    first, new = variants[0], variants[-1]
    print(f"sparsedebug playbook run (embedded MiniLM pair, model cached), {args.rounds} interleaved rounds, fresh process each")
    print(table(variants, first.name, rss=True))
    print(load_line(loads))
    for variant in variants:
        walked = facts[variant.name]
        cand, fixed = (int(np.median([getattr(f, side) for f in walked])) for side in ("candidate_samples", "fixed_samples"))
        per_step = ", ".join(f"{step} {float(np.median([f.steps[step] for f in walked])):.1f}" for step in walked[0].steps)
        decisions, pairings = Counter(f.decision for f in walked), Counter(f.pairing for f in walked)
        print(f"{variant.name}: latency samples (median) candidate {cand}, fixed {fixed}; decisions "
              f"{dict(decisions)}; fixed run judged against {dict(pairings)}; step seconds (median): {per_step}")
    ratio = float(np.median(new.seconds)) / float(np.median(first.seconds))
    verdict = "within" if ratio <= TARGET else "OVER"
    print(f"this tree / old: {ratio:.2f}x of the median wall time ({verdict} the {TARGET}x target)")


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
