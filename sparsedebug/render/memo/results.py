"""The memo's results table and the owners of its blockers, in words a lead decodes.

Every number is a figure of a ``result`` claim (``signoff.memo_results`` builds them), printed by ``num``; nothing
is computed here. The check names are the lead's words (speed, p99 latency, quality, dense fallback, precision),
never the gate's codes.
"""

from __future__ import annotations

from sparsedebug.records.memo import Claim, Memo, ResultColumn, ResultRow
from sparsedebug.render.memo.phrases import WHY_WORDS, Style, num, precision_changes_of
from sparsedebug.render.words.figures import speedup_basis_words

ROW_WORDS: dict[str, str] = {
    "speedup": "speedup vs baseline", "latency": "latency p50 / p95 / p99",
    "quality": "quality vs dense at equal latency budget", "fallback": "meant-sparse layers running dense",
    "precision": "precision check (kernel error, dtype)", "energy": "energy (board power)",
}
"""Each row of the results table, in words."""

CLOCK_WORDS: dict[str, str] = {
    "measured": "timed on {d}", "untraced": "timed on {d}, profiler off", "traced": "traced on {d}, profiler on",
    "profiled": "profiled on {d}", "projected": "projected on {d}",
}

CAPTURE_WORDS: dict[str, str] = {
    "quality": "not measured (a trace carries no model output): evaluate the sparse model against dense offline",
    "outputs": "not measured (a trace carries no model output): compare the candidate's outputs with the baseline's offline",
    "precision": ("not measured: a trace holds no kernel error; replay the layers against fp64 "
                  "(`sparsedebug replay WORKLOAD.yaml`)"),
    "power": ("not measured: log `nvidia-smi --query-gpu=timestamp,power.draw --format=csv -lms 100 -f power.csv` "
              "during both runs, then re-run with `--power power.csv`"),
    "power_replay": "not measured: this CPU has no energy reading for the replay",
    "same": "not measured",
    "latency samples": "not measured: no latency samples",
    "latency samples on both sides": "not measured: no latency samples on one side",
}
"""What a cell without evidence says: that it is not measured, and what to capture."""

def row_words(r: ResultRow) -> str:
    """A row's label; the latency row's names the p95 and p99 only when its cells state them."""
    few = r.row == "latency" and any(c.terms.get("tail") == "few" for c in r.cells)
    return "latency" if few else ROW_WORDS[r.row]


LIMIT_LEGEND = ("A floor or limit is the gate policy's pass line (a speedup at least its floor, a ratio at most its limit); "
                "inconclusive: too few or disturbed samples to judge.")
"""What the table's floors, limits and verdicts mean, said once under it."""

STATUS_WORDS = {"pass": "pass", "fail": "**FAIL**", "inconclusive": "inconclusive"}


def _word(st: Style, c: Claim, limit: str = "") -> str:
    """``**FAIL** (floor 1.000x)``, ``inconclusive (too few samples; floor 1.000x)``: the status, why, and the limit."""
    status = c.terms.get("status", "")
    word = STATUS_WORDS.get(status, status)
    notes = [n for n in (WHY_WORDS.get(c.terms.get("why", "")), limit) if n]
    word += f" ({'; '.join(notes)})" if notes else ""
    return word if st.markdown else word.replace("**", "")


def _status(st: Style, c: Claim, limit: str = "") -> str:
    return f", {_word(st, c, limit)}" if c.terms.get("status") else ""


def _limit(c: Claim, name: str, side: str) -> str:
    f = c.figure(name)
    return f"{side} {num(f)}" if f is not None else ""


def cell(st: Style, c: Claim) -> str:
    """One cell of the table: its figures, its status under the policy's limit, or what to capture."""
    state = c.terms.get("state")
    if state == "reference":
        return "reference"
    if state == "none_meant":
        return "no layer meant sparse"
    if state == "kernel_named":
        kernels = c.figure("sparse_kernels")
        return (f"not counted per layer: a CUDA-graph trace names kernels, not layers ({num(kernels)} sparse GEMM "
                f"kernel{'s' if kernels is not None and kernels.value != 1 else ''} ran)")
    if state == "not_measured":
        return CAPTURE_WORDS.get(c.terms.get("capture", ""), "not measured")
    role = c.terms.get("role")
    row = c.code
    if row == "speedup":
        sp = c.figure("speedup_p50")
        return (f"{num(sp)} ({speedup_basis_words(sp)})" if sp is not None else num(sp)) + _status(st, c, _limit(c, "speedup_min", "floor"))
    if row == "latency":
        n, cap = c.figure("latency_samples"), c.figure("p99_max_ratio")
        if c.terms.get("tail") == "few":  # p95 and p99 of so few samples only interpolate between the slowest ones
            needs = c.figure("tail_min_samples")
            why = f": a p95 or p99 needs {num(needs)} samples" if needs is not None else ""
            text = f"p50 {num(c.figure('latency_p50_ms'))}, slowest {num(c.figure('latency_slowest_ms'))} (n={num(n)}{why})"
            limit = f"limit {num(cap)}x the baseline's slowest" if cap is not None else ""
            limit = "" if c.terms.get("status") == "inconclusive" else limit  # nothing was held to it
            return text + (f"; tail check {_word(st, c, limit)}" if c.terms.get("status") else "")
        text = " / ".join(num(c.figure(f"latency_{p}_ms")).removesuffix(" ms") for p in ("p50", "p95")) + \
            f" / {num(c.figure('latency_p99_ms'))}"
        text += f" (n={num(n)})" if n is not None else ""
        ratio = c.figure("p99_ratio")
        if ratio is not None:
            text += f"; p99 {num(ratio)}x the baseline's"
        return text + _status(st, c, f"limit {num(cap)}x" if cap is not None else "")
    if row == "quality":
        metric = c.terms.get("metric", "cosine")
        text = f"{metric} {num(c.figure(metric, role))}"
        dense = c.figure("equal_latency_dense")
        if dense is not None:
            removed = c.figure("equal_latency_removed")
            if c.terms.get("equal_latency") == "not_matched":
                text += f"; no narrowed dense got this fast ({num(dense)} at {num(removed)} FFN cut)"
            elif removed is not None and removed.value == 0:
                text += f"; the unpruned dense model ({num(dense)}) already fits that latency"
            else:
                text += f"; dense at this latency {num(dense)} ({num(removed)} FFN cut)"
            text += ": sparsity wins" if c.terms.get("sparsity_wins") == "yes" else ": dense wins"
        return text + _status(st, c, _limit(c, "cosine_min", "floor"))
    if row == "fallback":
        return f"{num(c.figure('fell_back'))} of {num(c.figure('meant_sparse'))}" + _status(st, c, _limit(c, "fallback_rate_max", "limit"))
    if row == "precision":
        changes, worst = c.figure("precision_changes"), c.figure("worst_err_share")
        parts = []
        named = precision_changes_of(c)
        if len(named) == 1:
            parts.append("; ".join(f"dtype {st.code(was)} -> {st.code(now)} on {st.code(layer)}" for layer, was, now in named))
        elif changes is not None:
            parts.append(f"{num(changes)} layer{'s' if changes.value != 1 else ''} changed dtype or kernel")
        if worst is not None:  # said apart from the verdict: a dtype change fails the check with the error within tolerance
            parts.append(f"kernel error {'within' if worst.value <= 1 else 'past'} tolerance (worst {num(worst)} of it)")
        return _word(st, c) + (f": {'; '.join(parts)}" if parts else "")
    if row == "energy":
        per = "per token" if c.terms.get("per") == "joules_per_token" else "per forward"
        f = c.figure("joules_per_token") or c.figure("joules_per_forward")
        power = c.figure("mean_power_w")
        return f"{num(f)} {per}" + (f" at {num(power)}" if power is not None else "")
    return ""


def column_head(st: Style, col: ResultColumn) -> str:
    """A column's head: the role and the run's name."""
    return f"{col.role} {st.code(col.run)}"


def column_clock(col: ResultColumn) -> str:
    """Where a column's latencies were timed."""
    return CLOCK_WORDS[col.clock].format(d=col.device)


def table(st: Style, memo: Memo) -> list[str]:
    """The results table: one Markdown row per figure, a column per run (or, in plain text, one line per cell)."""
    if not memo.results:
        return []
    cols = memo.columns
    if st.markdown:
        out = ["| | " + " | ".join(column_head(st, c) for c in cols) + " |", "|---" * (len(cols) + 1) + "|",
               "| timed how | " + " | ".join(column_clock(c) for c in cols) + " |"]
        out += ["| " + row_words(r) + " | " + " | ".join(cell(st, c) for c in r.cells) + " |" for r in memo.results]
        return out
    out = []
    for r in memo.results:
        out.append(f"{row_words(r)}: " + "; ".join(f"{col.role} {cell(st, c)}" for col, c in zip(cols, r.cells, strict=True)))
    return out
