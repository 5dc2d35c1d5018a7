"""Render a power log's channels and one window's energy as rich tables."""

from __future__ import annotations

from rich.table import Table

from sparsedebug.records.power import PowerLog, WindowEnergy
from sparsedebug.render.terminal.fit import optional, under
from sparsedebug.render.words.sources_power import channel_note, scope_words, window_words

_MEASURES = {
    "power_instant": "power, instantaneous",
    "power_average": "power, averaged",
    "energy_counter": "energy counter",
    "energy_total": "energy totals",
}


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:,.0f} ms"


def power_log_table(log: PowerLog) -> Table:
    """One row per power or energy channel: what it measures, its scope, how often it updates, its readings."""
    table = Table(title=f"{log.source} power log: {log.file}", show_header=True)
    for header in ("channel", "measures", "unit", "update period", "averages", "readings", "devices", "scope", "note"):
        table.add_column(header, justify="right" if header in ("update period", "averages", "readings") else "left",
                         overflow="fold")
    for channel in log.channels:
        rows = log.readings.get(channel.field, [])
        devices = sorted({r.device for r in rows})
        table.add_row(channel.field, _MEASURES[channel.quantity], channel.unit, _ms(channel.update_period_s),
                      f"{channel.averaging_s:g} s" if channel.averaging_s else "-", f"{len(rows):,}", ", ".join(devices),
                      scope_words(channel.scope), channel_note(channel))
    placed = ("UTC" if log.utc_offset_h == 0 else f"UTC{log.utc_offset_h:+g} h") if log.utc_offset_h is not None else "no UTC offset: not placed in time"
    if log.time_base == "monotonic":
        placed = "monotonic (seconds since boot, not UTC): not placed in time"
    limit = f"power limit {log.power_limit_w:g} W; " if log.power_limit_w is not None else ""
    table.caption = f"{limit}clock: {placed}" if log.channels else f"no power or energy reading; clock: {placed}"
    optional(table, "scope", "averages", "devices")
    under(table, "note")
    return table


def window_energy_table(energy: WindowEnergy) -> Table:
    """The energy of one window: status, joules, mean power, idle power apart, clock, and how it was taken."""
    table = Table(title=f"energy in the window: {energy.file}", show_header=True)
    for header in ("status", "joules", "mean power", "idle power", "SM clock", "readings", "note"):
        table.add_column(header, justify="left" if header in ("status", "note") else "right", overflow="fold")

    def watts(value: float | None) -> str:
        return "-" if value is None else f"{value:,.1f} W"

    table.add_row(
        energy.status, "-" if energy.joules is None else f"{energy.joules:,.4g} J", watts(energy.mean_power_w),
        watts(energy.idle_power_w),
        ("-" if energy.sm_clock_mhz is None else f"{energy.sm_clock_mhz:,.0f} MHz")
        + (f" ({', '.join(energy.clock_reasons)})" if energy.clock_reasons else ""),
        f"{energy.readings:,}", window_words(energy),
    )
    under(table, "note")
    return table
