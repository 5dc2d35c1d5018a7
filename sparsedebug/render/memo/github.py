"""A CI step summary (GitHub's ``$GITHUB_STEP_SUMMARY``): the decision, its reasons and every gate check.

``gate --summary`` writes it for a gate verdict and ``memo --format github`` for a bundle: one renderer. Each check's
measured figures are worded by ``render.words.gate.measured_words``, as in the terminal table and JUnit.
"""

from __future__ import annotations

from sparsedebug.records.memo import Claim, Memo
from sparsedebug.render.memo import phrases as p
from sparsedebug.render.memo.formats import MemoFormat, register
from sparsedebug.render.memo.markdown import reason_lines
from sparsedebug.render.words.gate import measured_words

STATUS = {"pass": "PASS", "fail": "FAIL", "skipped": "SKIP", "inconclusive": "INCONCLUSIVE"}
POLICY = {"fail": "fails the gate", "warn": "warning", "pass": "passes"}
"""What an inconclusive check's ``on_inconclusive`` made of it."""


def _status(c: Claim) -> str:
    status = c.terms.get("status", "")
    if status == "inconclusive":
        policy = c.terms.get("on_inconclusive") or "pass"
        return f"INCONCLUSIVE ({POLICY.get(policy, policy)}: on_inconclusive {policy})"
    return STATUS.get(status, status)


def _threshold(c: Claim) -> str:
    """The policy's limits a check held its figures to, as printed (``-`` where the check has none)."""
    limit = [f for f in c.figures if f.source.record == "gate policy"]
    return " / ".join(p.num(f) for f in limit) if limit else "-"


@register
class GithubMemo(MemoFormat):
    """Markdown for a CI job summary."""

    name = "github"
    help = "a CI step summary (also gate --summary)"

    def format(self, memo: Memo) -> str:
        """The step summary."""
        st = p.MD
        out = [f"## {memo.title}: {p.DECISION_WORDS.get(memo.decision.code or '', memo.decision.code or '')}", "",
               p.decision(st, memo.decision), ""]
        out += [*reason_lines(memo, st), ""] if memo.reasons else []
        out += [*(f"- {p.headline(f)}" for f in memo.headline), ""] if memo.headline else []
        if memo.checks and memo.gate is not None:
            measured: dict[str, str] = {check.id: measured_words(check) for check in memo.gate.checks}
            out += ["| check | result | measured | threshold |", "| --- | --- | --- | --- |"]
            for c in memo.checks:
                out.append(f"| `{c.code}` | {_status(c)} | {measured.get(c.code or '', '-')} | {_threshold(c)} |")
            out.append("")
        return "\n".join(out)
