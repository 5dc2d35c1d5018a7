"""Does the README's CI gate hold on a busy runner? Identical pair and a 15% slowdown, beside one busy process.

Runs the README's recipe (``sparsedebug gate BASE CAND --policy playbooks/gate-ci.yaml``) RUNS times on an
identical pair (``llama_dense.yaml`` twice) and RUNS times on a planted slowdown (``llama_dense_slow15.yaml``: one
extra MLP, about 15% more time per forward), alternating, while one competing process spins (``while True: pass``)
pinned with ``taskset`` to the same cores as every gate run (``--cores``, default all of this machine's). Prints,
per run, the exit code, the speed check's status, the rule's judgement (core.judgement), the paired ratio, the
rounds timed (with those added to settle the ratio) and the wall time; then how many identical runs passed and how
many slowdown runs failed (targets: 19 of 20 each), and the load: the 1-minute load average before and after.

Usage: python benchmarks/gate_under_load.py [--runs 20] [--cores 0,1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "fixtures" / "workloads" / "llama_dense.yaml"
SLOW = ROOT / "fixtures" / "workloads" / "llama_dense_slow15.yaml"
POLICY = ROOT / "playbooks" / "gate-ci.yaml"
SPIN = "while True:\n    pass\n"


def _timing_note(note: dict[str, object]) -> str:
    """A gate timing note and the timing problems behind it (``core.timing_*`` codes), e.g.
    ``gate.timings_unstable(core.timing_unsettled+core.timing_spread)``."""
    values = note.get("values")
    problems = values.get("problems") if isinstance(values, dict) else None
    said = "+".join(str(p) for p in problems) if isinstance(problems, list) else ""
    return f"{note['code']}({said})" if said else str(note["code"])


def gate(cand: Path, cores: str) -> dict[str, object]:
    """One gate run of the README's recipe, pinned to ``cores``: its exit code, speed check and timing."""
    start = time.perf_counter()
    command = ["taskset", "-c", cores, sys.executable, "-m", "sparsedebug", "gate", str(BASE), str(cand),
               "--policy", str(POLICY), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    row: dict[str, object] = {"rc": done.returncode, "wall_s": wall}
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        row["error"] = done.stderr.strip().splitlines()[-1:] or ["no output"]
        return row
    speed = next(c for c in result["checks"] if c["id"] == "effective_speedup")
    test = speed.get("test") or {}
    row.update(speed=speed["status"], judgement=test.get("judgement"), ratio=test.get("ratio"),
               failing=[c["id"] for c in result["checks"] if c["status"] != "pass" and c["status"] != "skipped"],
               basis=sorted({_timing_note(n) for c in result["checks"] for n in c["basis"] if n["code"].startswith("gate.timings")}))
    return row


def main() -> None:
    """Alternate identical and slowdown gate runs beside one pinned spinner; print each and the counts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cores", default=",".join(str(c) for c in sorted(os.sched_getaffinity(0))))
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    spinner = subprocess.Popen(["taskset", "-c", args.cores, sys.executable, "-c", SPIN])
    counts = {"identical": 0, "slowdown": 0}
    try:
        print(f"cores {args.cores}; competing process: one spinning python (pid {spinner.pid}) on the same cores; "
              f"1-min load before {load_before:.2f}")
        print("run  pair       rc  speed         judgement     ratio   wall_s  timing notes")
        for i in range(args.runs):
            for pair, cand in (("identical", BASE), ("slowdown", SLOW)):
                row = gate(cand, args.cores)
                ok = row["rc"] == 0 if pair == "identical" else row["rc"] == 1 and row.get("speed") == "fail"
                counts[pair] += int(ok)
                ratio = f"{row['ratio']:.3f}" if isinstance(row.get("ratio"), float) else "-"
                basis = row.get("basis")
                notes = ",".join(str(b) for b in basis) if isinstance(basis, list) and basis else str(row.get("error", ""))
                print(f"{i + 1:>3}  {pair:<9}  {row['rc']}   {row.get('speed', '-')!s:<12}  {row.get('judgement')!s:<12}  "
                      f"{ratio:>6}  {row['wall_s']:6.1f}  {notes}", flush=True)
    finally:
        spinner.kill()
        spinner.wait()
    print(f"identical pair passed {counts['identical']} of {args.runs}; 15% slowdown failed (speed check) "
          f"{counts['slowdown']} of {args.runs}; 1-min load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
