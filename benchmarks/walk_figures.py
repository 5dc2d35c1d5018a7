"""The trace-pair walk with its figures drawn as SVG text, against the commit before (7e8790a: matplotlib).

Issue 57: ``playbook run --no-reduce`` on the shared H200 T2048 pair spent 57% of its time
drawing five matplotlib figures. This runs that walk, each time in a fresh process, with this
tree and with an old commit's worktree (``--old``, made by ``git worktree add /tmp/old57
7e8790a``), in interleaved rounds (the order rotating), and prints p50/p95/p99 of the wall
time, the ratio of medians (target: at most 0.6x the old) and each side's peak RSS. Both
sides walk the same traces with the same samples and rounds: the figures are all that
changed between them on this path (and the start, see ``bisect_start.py``). Whether a side
imported matplotlib is checked once per side with ``-X importtime``. Usage::

    git worktree add /tmp/old57 7e8790a
    python benchmarks/walk_figures.py --old /tmp/old57 [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile

from side_by_side import REPO, Variant, load_line, python, run_rounds, table, tree

TARGET = 0.6
PAIR = [os.path.join(REPO, "fixtures/h200", name) for name in ("trace_dense_T2048.json.gz", "trace_sparse_mlp_T2048.json.gz")]


def walk(out: str) -> list[str]:
    """The walk's command line, writing (and replacing) the bundle ``out``."""
    return [python(), "-m", "sparsedebug", "playbook", "run", "--no-reduce", "--baseline", PAIR[0], "--candidate", PAIR[1],
            "-o", out, "--force"]


def imports_matplotlib(variant: Variant, out: str) -> bool:
    """Whether the walk of ``variant`` imports matplotlib (``-X importtime`` lists every module imported)."""
    argv = walk(out)
    done = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], env={**os.environ, **variant.env}, cwd=variant.cwd,
                          capture_output=True, text=True, check=False)
    return any(line.rsplit("|", 1)[-1].strip().startswith("matplotlib") for line in done.stderr.splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="worktree of the commit before this work (git worktree add DIR 7e8790a)")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        new = Variant("walk, this tree (SVG text)", walk(f"{tmp}/new"), tree(REPO))
        old_tree = os.path.abspath(args.old)
        old = Variant("walk, 7e8790a (matplotlib)", walk(f"{tmp}/old"), tree(old_tree), old_tree)
        print(f"matplotlib imported: this tree {imports_matplotlib(new, f'{tmp}/probe-new')}, "
              f"old {imports_matplotlib(old, f'{tmp}/probe-old')}")
        loads = run_rounds([new, old], args.rounds)
        with open(f"{tmp}/new/report.html", encoding="utf-8") as page:
            figures = page.read().count("<svg ")
    print(f"playbook run --no-reduce on the H200 T2048 pair (fixtures/h200), {args.rounds} interleaved rounds, fresh process each")
    print(table([old, new], old.name, rss=True))
    print(load_line(loads))
    ratio = float(sorted(new.seconds)[len(new.seconds) // 2]) / float(sorted(old.seconds)[len(old.seconds) // 2])
    verdict = "within" if ratio <= TARGET else "OVER"
    print(f"this tree / old: {ratio:.2f}x of the median wall time ({verdict} the {TARGET}x target), {figures} SVG figures in report.html")


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
