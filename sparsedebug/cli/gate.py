"""`sparsedebug gate`: thresholds from a policy on a baseline/candidate pair; the CI verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sparsedebug.cli.common import (
    EXIT_CHECK_FAILED,
    ExecutorOption,
    JsonOption,
    WideOption,
    console,
    emit_json,
    err_console,
    handle_errors,
    rank_pair,
)
from sparsedebug.core.errors import UserError
from sparsedebug.records.defaults import MAX_REPEATS


@handle_errors
def gate(
    baseline: Annotated[Path, typer.Argument(help="Baseline: run record (.json/.yaml), workload YAML (replayed) or PyTorch trace (imported).")],
    candidate: Annotated[Path, typer.Argument(help="Candidate, same kinds as the baseline.")],
    policy: Annotated[
        Path | None, typer.Option("--policy", help="Gate policy YAML (see playbooks/gate-default.yaml, and playbooks/gate-ci.yaml for CI); default: built in.")
    ] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here (one testcase per threshold).")] = None,
    summary: Annotated[
        Path | None, typer.Option("--summary", help="Write a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY).")
    ] = None,
    repeats: Annotated[
        int | None, typer.Option("--repeats", min=3, max=MAX_REPEATS, help="Override the repeat count of workloads that get replayed (3 to 10,000).")
    ] = None,
    executor: ExecutorOption = "local",
    wide: WideOption = False,
    json_out: JsonOption = False,
) -> None:
    """Gate a candidate against a baseline: speedup, p99 latency, quality, fallbacks, precision drift.

    A speed shortfall fails only when it is real: the candidate must be slower than
    the target by more than the policy's factor AND a rank test must say so (asv
    style; with too few samples for the test, the factor alone decides). The p99
    checks fail only beyond noise: the candidate's p99 lower confidence bound must be
    over the limit, so one preempted round is not a failure. A check whose evidence
    is missing is skipped unless the policy says missing_evidence: fail. An empty
    policy file is an error; thresholds are checked to their range.

    A latency check on runs whose timings were disturbed beyond the noise-aware
    harness' bound (see the run's outcome.timing) is inconclusive: neither pass nor fail.

    Exit 0 when no check fails (every check passes, is skipped or is
    inconclusive: the table and the summary say INCONCLUSIVE, rerun on a quiet
    machine), 1 when one fails, 2 on bad input.

    BASELINE and CANDIDATE may be run sets (a directory or quoted glob of per-rank traces): every rank is
    compared with the same rank of the other set (printed first), then the rank the change is
    confined to (else the straggler, else the lowest rank) is analysed as a pair.
    """
    from sparsedebug.core.io import atomic_write_text
    from sparsedebug.render.junit import junit_xml
    from sparsedebug.render.markdown.gate import summary_markdown
    from sparsedebug.render.terminal.gate import gate_table
    from sparsedebug.signoff.gate import evaluate, load_policy
    from sparsedebug.sources.detect import describe_input, load_run

    pol = load_policy(policy)
    for out_path in (junit, summary):
        if out_path is not None and not (out_path.parent if str(out_path.parent) else Path(".")).is_dir():
            raise UserError(f"{out_path}: output directory {out_path.parent} does not exist")
    baseline, candidate, ranks = rank_pair(baseline, candidate, executor, json_out=json_out, wide=wide)
    err = err_console()
    runs = []
    for path in (baseline, candidate):
        with err.status(describe_input(path)):
            runs.append(load_run(path, repeats=repeats))
    result = evaluate(runs[0], runs[1], pol)
    if junit is not None:
        atomic_write_text(junit, junit_xml(result))
    if summary is not None:
        atomic_write_text(summary, summary_markdown(result))
    if json_out:
        emit_json(result if ranks is None else {"ranks": ranks, "gate": result})
    else:
        out = console(wide)
        out.print(gate_table(result))
        for label, written in (("JUnit XML", junit), ("summary", summary)):
            if written is not None:
                out.print(f"wrote {label} {written}")
    if not result.passed:
        raise typer.Exit(EXIT_CHECK_FAILED)


def register(app: typer.Typer) -> None:
    """Add `gate` to the app."""
    app.command("gate")(gate)
