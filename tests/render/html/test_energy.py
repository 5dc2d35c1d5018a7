"""The page's energy figure and the terminal's energy table, from the same records as the memo's lines."""

from __future__ import annotations

from tests.render.markdown.test_energy import _bundle


def test_the_page_draws_energy_against_latency_and_the_terminal_prints_each_side() -> None:
    from rich.console import Console

    from sparsedebug.render.html.energy import energy_section
    from sparsedebug.render.terminal.energy import energy_table

    bundle = _bundle(420.0, 380.0)
    section = energy_section(bundle)
    assert section.chart is not None and "board power" in section.chart.caption and section.missing is None
    assert "candidate (sparse)" in section.chart.svg and "baseline (dense)" in section.chart.svg
    table = energy_table(bundle)
    assert table is not None
    console = Console(width=200, record=True)
    console.print(table)
    text = console.export_text()
    energy = bundle.energy
    assert energy is not None
    for role in ("baseline", "candidate"):
        side = energy.side(role)
        assert side is not None and side.joules_per_token is not None
        assert f"{side.joules_per_token.p50:.4g}" in text
    short = energy_section(_bundle(420.0, 380.0, shortest_s=1.0))
    assert short.chart is None and short.missing is not None and "too short" in short.missing
