"""The walk's one-screen summary: one line per playbook step with its key figure, then the decision and its reasons."""

from __future__ import annotations

from sparsedebug.records.memo import Claim, Memo
from sparsedebug.render.memo import action, stage
from sparsedebug.render.memo import hypothesis as hyp
from sparsedebug.render.memo import phrases as p
from sparsedebug.render.memo.formats import MemoFormat, register
from sparsedebug.render.memo.markdown import reason_lines


def _freeze(c: Claim) -> str:
    """The judged run's device from its own artifact, then the analysing machine, labelled as such."""
    if c.withheld:
        return p.withheld(p.PLAIN, c)
    t = c.terms
    role = c.items[0] if c.items else "candidate"
    device = t.get(f"run.{role}.device")
    run = f"{role} on {device} (from its {t.get(f'run.{role}.source', 'record')})" if device else ""
    parts = [t[k] for k in ("machine.python",) if k in t]
    parts += [f"{k.split('.')[1]} {t[k]}" for k in ("machine.numpy", "machine.torch") if k in t]
    gpu = t.get("machine.gpu")
    parts.append("no GPU" if gpu in (None, "none") else f"GPU {gpu}")
    verb = "measured and analysed" if t.get(f"run.{role}.clock") == "measured" else "analysed"
    machine = f"{verb} with " + ", ".join(parts) if "machine.python" in t else ""
    return "; ".join(x for x in (run, machine) if x)


def _locate(c: Claim) -> str:
    if c.code != "divergence" or c.withheld:
        return stage.first_stage(p.PLAIN, c)
    kinds = [p.FINDING_WORDS.get(k, k) for k in c.terms.get("kinds", "").split(",") if k]
    count = c.figure("layers_named")
    text = f"first stage {c.terms.get('stage', '')}: " + (", ".join(kinds) or "divergent")
    return text + (f" ({p.num(count)} layers)" if count is not None else "")


def _classify(c: Claim) -> str:
    if c.withheld:
        return hyp.primary_mechanism(p.PLAIN, c)
    if c.code in ("established", "not_established") and c.terms.get("ranked_by") == "attribution":
        change = c.figure("change_ms")
        of = f" of the {p.num(change)} change" if change is not None else ""
        head = "" if c.code == "established" else "not established: leading "
        ms, share = c.figure("carried_ms"), c.figure("carried_share")
        if ms is not None and share is not None and round(ms.value, 3) > 0:
            if hyp.over_explains(c) is not None:  # one line: the memo names what pulls the other way
                return f"{head}{c.terms.get('mechanism', '')} carries {p.num(ms)} ({p.num(share)}, more than the whole change){of}"
            return f"{head}{c.terms.get('mechanism', '')} carries {p.num(ms)} ({p.num(share)}){of}"
    return hyp.primary_mechanism(p.PLAIN, c)


def _change(c: Claim) -> str:
    text = action.change(p.PLAIN, c)
    return text.split(" (")[0]


def _rerun(c: Claim | None) -> str:
    if c is None:
        return "no re-run"
    before, after, ch = c.figure("latency_p50_ms", "candidate"), c.figure("latency_p50_ms", "fixed"), c.figure("change")
    agrees = {"yes": ", as expected", "no": ", AGAINST the expected direction"}.get(c.terms.get("agrees", ""), "")
    return f"p50 {p.num(before)} -> {p.num(after)} ({p.num(ch)}, {c.terms.get('direction', 'same')}{agrees})"


@register
class TerminalMemo(MemoFormat):
    """Plain text for a terminal (no markup: names from the inputs are printed as they are)."""

    name = "terminal"
    help = "the one-screen summary playbook run prints"

    def format(self, memo: Memo) -> str:
        """The summary."""
        out: list[str] = []
        s, h, a = memo.symptom, memo.hypothesis, memo.action
        if s is not None:
            out.append(f"1 freeze    {_freeze(s.build_tags)}")
            out.append(f"2 locate    {_locate(s.first_stage)}")
            used = next((c for c in s.failing_metric if c.kind == "sparse_kernels"), None)
            if used is not None:
                out.append(f"  sparse kernels used: {p.sparse_kernels(p.PLAIN, used)}")
        if h is not None:
            out.append(f"3 classify  {_classify(h.primary)}")
        if a is not None:
            out.append(f"4 reproduce {_change(a.change)}")
            out.append(f"5 rerun     {_rerun(a.measured)}")
        out.append(p.decision(p.PLAIN, memo.decision))
        out += [f"  {line}" for line in reason_lines(memo, p.PLAIN)]
        out += [p.headline(f) for f in memo.headline]
        return "\n".join(out)
