"""The memo's results table under the decision, its blockers with owners, and the limits a lead reads it by."""

from __future__ import annotations

from sparsedebug.records.memo import Memo
from sparsedebug.render.memo.claims import MAX_LINE, MAX_SENTENCE_WORDS, check_claims, lead_problems
from sparsedebug.render.memo.formats import render
from sparsedebug.signoff.memo import build_memo
from sparsedebug.sources.playbook import load_playbook
from tests.support.bundles import make_bundle
from tests.support.synth import dense_run, sparse_run

BOOK = load_playbook()


def _memo(fixed: bool = True) -> Memo:
    base, cand = dense_run(5.0), sparse_run(6.5, fallback=True)
    return build_memo(make_bundle(base, cand, sparse_run(5.5, fallback=True) if fixed else None), BOOK)


def _row(lines: list[str], label: str) -> list[str]:
    row = next(line for line in lines if line.startswith(f"| {label} |"))
    return [cell.strip() for cell in row.strip("|").split("|")][1:]


def test_the_table_sits_right_under_the_decision_with_a_column_per_run_and_its_clock() -> None:
    lines = render(_memo(), "markdown").splitlines()
    assert lines[2].startswith("Decision: **") and lines[3].startswith("Blocking, with the owner of each ([every gate check](")
    assert lines[4:7] == ["- **speed**: the serving performance owner", "- **dense fallback**: the compiler sparsity pass owner", ""]
    assert lines[7] == "| | baseline `dense` | candidate `sparse_fallback` | fixed `sparse_fallback` |"
    assert _row(lines, "timed how") == ["timed on this CPU"] * 3
    labels = [line.split("|")[1].strip() for line in lines[10:16]]
    assert labels == ["speedup vs baseline", "latency p50 / p95 / p99", "quality vs dense at equal latency budget",
                      "meant-sparse layers running dense", "precision check (kernel error, dtype)", "energy (board power)"]


def test_each_cell_says_pass_or_fail_against_the_policy_limit() -> None:
    memo = _memo()
    lines = render(memo, "markdown").splitlines()
    speed = _row(lines, "speedup vs baseline")
    assert speed[0] == "reference"
    assert speed[1] == "0.769x (p50 over p50), **FAIL** (floor 1.000x)" and speed[2] == "0.909x (p50 over p50), **FAIL** (floor 1.000x)"
    tail = _row(lines, "latency p50 / p95 / p99")
    assert tail[0] == "5.000 / 5.090 / 5.098 ms (n=30)"  # every run's p95 and p99, not p50 alone, and the samples they rest on
    assert tail[1].endswith("p99 1.300x the baseline's, **FAIL** (limit 1.250x)")
    assert tail[2].endswith("p99 1.100x the baseline's, pass (limit 1.250x)")
    assert _row(lines, "meant-sparse layers running dense")[1:] == ["1 of 2, **FAIL** (limit 0%)"] * 2
    assert _row(lines, "quality vs dense at equal latency budget")[1] == "cosine 0.9700, pass (floor 0.9000)"
    energy = _row(lines, "energy (board power)")
    # the capture is asked once, in the last column, as a command; the other columns point to it
    assert energy[-1].startswith("not measured: log `nvidia-smi --query-gpu=") and "`--power power.csv`" in energy[-1]
    assert energy[:-1] == ["not measured"] * (len(energy) - 1)
    assert check_claims("\n".join(lines), memo) == []


def test_every_failing_check_is_a_reason_with_its_playbook_owner_and_the_decision_names_each() -> None:
    memo = _memo()
    failing = [c.id for c in memo.verdict().checks if c.status == "fail"]
    assert sorted(failing) == ["effective_speedup", "fallback_rate"]
    assert sorted(r.code or "" for r in memo.reasons if r.code in failing) == sorted(failing)
    owners = {r.code: r.terms["owner"] for r in memo.reasons}
    assert owners["effective_speedup"] == "serving performance owner"
    assert owners["fallback_rate"] == "compiler sparsity pass owner"
    text = render(memo, "markdown")
    assert ("Blocking: speed (owner: the serving performance owner); dense fallback (owner: the compiler sparsity pass "
            "owner).") in render(memo, "terminal")
    assert "more in" not in text and "the next change is owned by" not in text
    for word in ("effective_speedup", "fallback_rate", "p99_latency", "rule `"):
        assert word not in text


def test_a_run_without_blockers_names_the_owner_of_the_next_change() -> None:
    base, cand = dense_run(5.0), sparse_run(4.0)
    memo = build_memo(make_bundle(base, cand), BOOK)
    text = render(memo, "markdown")
    if memo.decision.items:  # a check that blocks is named with its owner instead
        assert "Blocking, with the owner of each:" in text and "the next change is owned by" not in text
    else:
        assert "Blocking" not in text and "the next change is owned by the" in text


def test_the_limits_name_long_lines_long_sentences_and_codes() -> None:
    long_line = "word " * 45
    problems = lead_problems(f"{'x' * (MAX_LINE + 1)}\n| {'y' * 250} |\n{long_line.strip()}.\nsee `scheduling.per_call_conversion`\n"
                             "the span_busy_ratio rose\nnames in `code_spans` are names")
    assert any(p.startswith(f"line of {MAX_LINE + 1} characters") for p in problems)
    assert not any("characters (limit 300)" in p for p in problems)  # a table row may run to 300
    assert any(p.startswith(f"sentence of 45 words (limit {MAX_SENTENCE_WORDS})") for p in problems)
    assert any("'scheduling.per_call_conversion'" in p for p in problems)
    assert any("'span_busy_ratio'" in p for p in problems)
    assert not any("code_spans" in p for p in problems)
    assert lead_problems(render(_memo(), "markdown")) == []
