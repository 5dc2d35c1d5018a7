"""The walk's energy figures for the terminal: one row per side, measured apart from estimated."""

from __future__ import annotations

from rich.table import Table

from sparsedebug.records.loaded import LoadedBundle
from sparsedebug.render.markdown.energy import STATUS_WORDS, clock_state
from sparsedebug.render.words.signoff import MACHINE_WORDS, side_note
from sparsedebug.render.words.sources_power import scope_words


def energy_table(bundle: LoadedBundle) -> Table | None:
    """Joules per forward and per token, tokens per joule, each p50 with its interval, per side; None without energy.json."""
    report = bundle.energy
    if report is None:
        return None
    scopes = ", ".join(dict.fromkeys(scope_words(s.scope) for s in report.sides if s.scope)) or "no reading"
    table = Table(title=f"energy per side, from each run's own window ({scopes})", caption=MACHINE_WORDS[report.machine])
    for name, right in (("run", False), ("status", False), ("J/forward", True), ("J/token", True), ("J/token interval", True),
                        ("tokens/J", True), ("clock state", False)):
        table.add_column(name, justify="right" if right else "left")
    for side in report.sides:
        jf, jt, tj = side.joules_per_forward, side.joules_per_token, side.tokens_per_joule
        interval = (f"{jt.low:.4g} to {jt.high:.4g} ({jt.confidence:.0%}, n={jt.n})" if jt is not None and jt.low is not None
                    and jt.high is not None else ("one window" if jt is not None else "-"))
        table.add_row(side.role, STATUS_WORDS[side.status], f"{jf.p50:.4g}" if jf else "-", f"{jt.p50:.4g}" if jt else "-", interval,
                      f"{tj.p50:.4g}" if tj else "-", clock_state(side) if side.status == "measured" else side_note(side))
        est = side.estimate
        if est is not None:
            table.add_row(f"{side.role} (target)", "ESTIMATE", f"{est.joules_per_forward:.4g}",
                          f"{est.joules_per_token:.4g}" if est.joules_per_token is not None else "-", "-",
                          f"{est.tokens_per_joule:.4g}" if est.tokens_per_joule is not None else "-", f"estimate on the {est.device}")
    return table
