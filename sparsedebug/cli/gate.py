"""`sparsedebug gate`: thresholds from a policy on a baseline/candidate pair; the CI verdict."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from sparsedebug.cli.common import (
    EXIT_CHECK_FAILED,
    AllowDifferentOption,
    ExecutorOption,
    JsonOption,
    LatencyOption,
    WideOption,
    allowed_dimensions,
    console,
    emit_json,
    err_console,
    handle_errors,
    rank_pair,
    say_comparability,
)
from sparsedebug.records.defaults import MAX_REPEATS

if TYPE_CHECKING:
    from rich.console import Console

    from sparsedebug.records.gate import GateResult
    from sparsedebug.records.memo import Memo


@handle_errors
def gate(
    baseline: Annotated[Path, typer.Argument(help="Baseline: run record (.json/.yaml), workload YAML (replayed) or PyTorch trace (imported).")],
    candidate: Annotated[Path, typer.Argument(help="Candidate, same kinds as the baseline.")],
    policy: Annotated[
        Path | None, typer.Option("--policy", help="Gate policy YAML (see playbooks/gate-default.yaml, and playbooks/gate-ci.yaml for CI); default: built in.")
    ] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here (one testcase per threshold).")] = None,
    summary: Annotated[Path | None, typer.Option("--summary", help="Write a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY).")] = None,
    repeats: Annotated[
        int | None, typer.Option("--repeats", min=3, max=MAX_REPEATS, help="Override the repeat count of workloads that get replayed (3 to 10,000).")
    ] = None,
    executor: ExecutorOption = "local",
    allow_different: AllowDifferentOption = None,
    latency: LatencyOption = None,
    wide: WideOption = False,
    json_out: JsonOption = False,
) -> None:
    """Gate a candidate against a baseline: speedup, p99 latency, quality, fallbacks, precision drift.

    First the two runs must be comparable (same model by layer shapes, same device and backend family,
    same phase, tokens and dtype): a pair that is not is refused (exit 2) unless --allow-different names it.

    The timed checks judge by one rule (docs/reference/judgement.md). A speed shortfall fails
    only when it is real: the candidate slower than the target by more than the
    policy's factor AND a two-sided rank test at alpha AND persistent. The p99 check
    fails only beyond noise: more candidate samples above max_ratio x the baseline's
    largest than chance puts there at alpha, or the candidate's p99 lower confidence
    bound over its budget, so one preempted round is not a failure.

    Samples needed to judge at all: the policy's significance.min_samples a side (6 by
    default; trace iterations, replay rounds); with fewer a timed check is inconclusive
    and says how many to capture or run. Two workloads are replayed in one interleaved
    session and compared round by round (a sample holds calls, the sides' alternating, to
    last 10 ms and at least 4 of them within 250 ms); rounds are added until the per-round
    ratio settles, within a time budget; past it the timings are unstable.
    With fewer, or timings disturbed beyond the noise-aware harness' bound, a check
    is inconclusive and the policy's on_inconclusive decides (fail by default, warn,
    pass); the table, the JUnit file and the summary say which.

    A check whose evidence is missing is skipped unless the policy says
    missing_evidence: fail; no latency samples leave the timed checks inconclusive. An empty policy file is an error; thresholds are checked
    to their range. Exit 0 when the gate passes, 1 when a check fails (or an
    inconclusive one under on_inconclusive: fail), 2 on bad input.

    BASELINE and CANDIDATE may be run sets (directories or quoted globs of per-rank traces): compared
    rank to rank first, then the confined rank (else the straggler, else the lowest) as the pair.
    """
    from sparsedebug.core.io import atomic_write_text, check_output
    from sparsedebug.locate.comparable import require_comparable
    from sparsedebug.render.junit import junit_xml
    from sparsedebug.render.memo.formats import render_verified
    from sparsedebug.signoff.gate import evaluate, load_policy
    from sparsedebug.signoff.memo import gate_memo
    from sparsedebug.sources.detect import describe_input, load_pair

    pol = load_policy(policy)
    for out_path, option in ((junit, "--junit"), (summary, "--summary")):
        if out_path is not None:
            check_output(out_path, option)
    baseline, candidate, ranks = rank_pair(baseline, candidate, executor, json_out=json_out, wide=wide)
    err = err_console()
    with err.status(Text(f"{describe_input(baseline)}, {describe_input(candidate)}")):
        runs = load_pair(baseline, candidate, repeats=repeats, latency=latency, rule=pol.significance)
    pair = require_comparable(runs[0], runs[1], allowed_dimensions(allow_different))
    result = evaluate(pair.base, pair.cand, pol).model_copy(update={"comparability": pair.check})
    if not json_out:
        _say_notes(result, err)
    doc = gate_memo(result, pair.base, pair.cand)  # the one review document the table, JUnit and the summary render
    if junit is not None:
        atomic_write_text(junit, junit_xml(doc))
    if summary is not None:
        atomic_write_text(summary, render_verified(doc, "github", str(summary)))
    if json_out:
        emit_json(result if ranks is None else {"ranks": ranks, "gate": result})
    else:
        _print_gate(doc, wide, junit, summary)
    if not result.passed:
        raise typer.Exit(EXIT_CHECK_FAILED)


def _say_notes(result: GateResult, err: Console) -> None:
    """The comparability notes, and why inconclusive timing checks cannot be judged on separately recorded runs."""
    from sparsedebug.render.terminal.gate import separate_sessions_line

    if result.comparability is not None:
        say_comparability(result.comparability, err)
    line = separate_sessions_line(result)
    if line is not None:
        err.print(f"note: {line}", markup=False, highlight=False, soft_wrap=True)


def _print_gate(doc: Memo, wide: bool, junit: Path | None, summary: Path | None) -> None:
    from sparsedebug.render.terminal.gate import gate_table

    out = console(wide)
    out.print(gate_table(doc))
    for label, written in (("JUnit XML", junit), ("summary", summary)):
        if written is not None:
            out.print(f"wrote {label} {written}")


def register(app: typer.Typer) -> None:
    """Add `gate` to the app."""
    app.command("gate")(gate)
