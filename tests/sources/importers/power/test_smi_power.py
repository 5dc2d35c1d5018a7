"""nvidia-smi logs as power evidence: each power field its own channel, the shared H200 log, generated logs
(counter and power only, misaligned, too short, counter wrap and restart), bad files."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.records.run import TimeWindow
from sparsedebug.render.words.sources_power import channel_note, scope_words, window_words
from sparsedebug.sources.importers.nvidia_smi import load_smi
from sparsedebug.sources.importers.power import MIN_UPDATE_PERIODS, energy_in_window, load_power_log, with_utc_offset
from tests.conftest import FIXTURES
from tests.support.powerlogs import write_smi_power_log

SHARED = FIXTURES / "h200" / "nvidia_smi_short.csv"
T0 = datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC).timestamp()


def window(start: float, seconds: float) -> TimeWindow:
    return TimeWindow(start_utc_s=start, end_utc_s=start + seconds, source="test")


def reference_joules(times: list[float], watts: list[float], last_s: float, start: float, end: float, step: float = 1e-4) -> float:
    """Piecewise-constant power (each reading until the next; the last for ``last_s``) summed on a fine grid."""
    total = 0.0
    for i in range(round((end - start) / step)):
        t = start + (i + 0.5) * step
        k = max(i for i, x in enumerate(times) if x <= t)
        if k == len(times) - 1 and t > times[-1] + last_s:
            raise AssertionError("grid outside the log")
        total += watts[k] * step
    return total


def test_shared_log_channels_and_idle_power() -> None:
    log = load_power_log(SHARED, utc_offset_h=0.0)
    (channel,) = log.channels
    assert channel.field == "power.draw" and channel.quantity == "power_average" and channel.averaging_s == 1.0
    assert channel.update_period_s == pytest.approx(0.25, abs=0.002)
    assert "25 %" in channel_note(channel) and scope_words(channel.scope).startswith("GPU board power")
    readings = log.readings["power.draw"]
    assert len(readings) == 83 and readings[0].value == 127.48 and readings[0].sm_clock_mhz == 1980
    assert sum(r.idle is True for r in readings) == 23 and all(r.t_utc_s is not None for r in readings)
    assert log.power_limit_w is None
    stamp = datetime(2026, 11, 29, 23, 42, 36, tzinfo=UTC).timestamp()
    taken = energy_in_window(log, window(stamp, 5.0))
    idle_values = sorted(r.value for r in readings if r.idle)
    assert taken.idle_power_w == pytest.approx(idle_values[len(idle_values) // 2])


def test_shared_log_window_shorter_than_its_sampling_is_too_short() -> None:
    log = load_power_log(SHARED, utc_offset_h=0.0)
    stamp = datetime(2026, 11, 29, 23, 42, 37, tzinfo=UTC).timestamp()
    taken = energy_in_window(log, window(stamp, 0.045))  # the shared traces' windows are 25-45 ms
    assert taken.status == "too_short" and taken.joules is None
    assert f"fewer than {MIN_UPDATE_PERIODS} update periods of power.draw" in window_words(taken)
    assert "1000 ms" in window_words(taken) and "25 % of the runtime is sampled" in window_words(taken)


def test_shared_log_integrates_the_averages_placed_mid_span() -> None:
    log = load_power_log(SHARED, utc_offset_h=0.0)
    rows = log.readings["power.draw"]
    start = datetime(2026, 11, 29, 23, 42, 36, 500000, tzinfo=UTC).timestamp()
    taken = energy_in_window(log, window(start, 4.0))
    times = [(r.t_utc_s or 0.0) - 0.5 for r in rows]
    expected = reference_joules(times, [r.value for r in rows], 0.25, start, start + 4.0)
    assert taken.status == "measured" and taken.method == "integrated_power"
    assert taken.joules == pytest.approx(expected, rel=1e-3)
    assert taken.mean_power_w == pytest.approx(expected / 4.0, rel=1e-3)
    assert taken.sm_clock_mhz is not None and taken.devices == ["0"]
    assert taken.clock_reasons == ["sw_power_cap"]  # the cap fires when the large GEMMs start (fixtures/h200/README.md)


def test_counter_preferred_and_power_only_agree(tmp_path: Path) -> None:
    watts = [150.0] * 5 + [300.0 + 10 * (k % 4) for k in range(40)] + [150.0] * 5
    both = write_smi_power_log(tmp_path / "both.csv", T0, 0.1, watts, energy_start_mj=5e6)
    power_only = write_smi_power_log(tmp_path / "power.csv", T0, 0.1, watts)
    counter_only = write_smi_power_log(tmp_path / "counter.csv", T0, 0.1, watts, fields=(), energy_start_mj=5e6)
    run = window(T0 + 0.7, 3.0)
    expected = reference_joules([T0 + 0.1 * k for k in range(len(watts))], watts, 0.1, run.start_utc_s, run.end_utc_s)
    from_counter = energy_in_window(load_power_log(both, 0.0), run)
    assert from_counter.method == "counter_difference" and from_counter.channel is not None
    assert from_counter.channel.field == "total_energy_consumption" and from_counter.channel.unit == "J"
    from_power = energy_in_window(load_power_log(power_only, 0.0), run)
    assert from_power.method == "integrated_power" and from_power.channel is not None
    assert from_power.channel.field == "power.draw.instant" and from_power.channel.averaging_s is None
    assert energy_in_window(load_power_log(counter_only, 0.0), run).joules == pytest.approx(from_counter.joules)
    # the counter lags the power by one interval (it counts the energy up to its reading) and is interpolated
    assert from_counter.joules == pytest.approx(expected, rel=0.01)
    assert from_power.joules == pytest.approx(expected, rel=1e-3)
    assert from_power.power_limit_w == 700.0 and from_power.sm_clock_mhz == 1980.0


def test_idle_power_kept_apart(tmp_path: Path) -> None:
    watts = [80.0] * 10 + [400.0] * 30 + [82.0] * 10
    idle = [w < 100 for w in watts]
    log = load_power_log(write_smi_power_log(tmp_path / "p.csv", T0, 0.1, watts, idle=idle), 0.0)
    taken = energy_in_window(log, window(T0 + 1.5, 2.0))
    assert taken.idle_power_w == pytest.approx(81.0)
    assert taken.mean_power_w == pytest.approx(400.0)


def test_counter_wrap_is_undone(tmp_path: Path) -> None:
    wrap = 2.0**32
    watts = [500.0] * 60
    log_path = write_smi_power_log(tmp_path / "w.csv", T0, 0.1, watts, fields=(), energy_start_mj=wrap - 1.2e6, energy_wrap_mj=wrap)
    taken = energy_in_window(load_power_log(log_path, 0.0), window(T0 + 1.0, 4.0))
    assert taken.status == "measured" and taken.joules == pytest.approx(2000.0, rel=1e-3)
    assert "wrapped between lines" in window_words(taken)


def test_counter_restart_counts_from_the_restart(tmp_path: Path) -> None:
    path = write_smi_power_log(tmp_path / "r.csv", T0, 0.1, [500.0] * 60, fields=(), energy_start_mj=9e8)
    lines = path.read_text().splitlines()
    restarted = [line for line in lines[:31]]
    for k, line in enumerate(lines[31:]):
        cells = line.split(", ")
        cells[-1] = f"{50_000 * (k + 1):.0f} mJ"
        restarted.append(", ".join(cells))
    path.write_text("\n".join(restarted) + "\n")
    taken = energy_in_window(load_power_log(path, 0.0), window(T0 + 1.0, 4.0))
    assert taken.status == "measured" and taken.joules == pytest.approx(2000.0, rel=1e-3)
    assert "restarted between lines 31 and 32" in window_words(taken) and "lower bound" in window_words(taken)


def test_too_short_for_the_update_period(tmp_path: Path) -> None:
    log = load_power_log(write_smi_power_log(tmp_path / "p.csv", T0, 0.1, [300.0, 310.0] * 20, energy_start_mj=0.0), 0.0)
    taken = energy_in_window(log, window(T0 + 1.0, 0.25))
    assert taken.status == "too_short" and "fewer than 3 update periods of total_energy_consumption (100 ms" in window_words(taken)
    assert energy_in_window(log, window(T0 + 1.0, 0.3)).status == "measured"
    assert energy_in_window(log, window(T0 + 1.0, 0.0)).status == "too_short"


def test_misaligned_logs(tmp_path: Path) -> None:
    path = write_smi_power_log(tmp_path / "p.csv", T0, 0.1, [300.0] * 50, utc_offset_h=-5.0)
    run = window(T0 + 1.0, 2.0)
    unplaced = load_power_log(path)
    assert unplaced.utc_offset_h is None and all(r.t_utc_s is None for r in unplaced.readings["power.draw.instant"])
    taken = energy_in_window(unplaced, run)
    assert taken.status == "unaligned" and "no UTC offset" in window_words(taken)
    wrong = energy_in_window(load_power_log(path, 0.0), run)
    assert wrong.status == "not_covered" and "outside the run's window" in window_words(wrong)
    placed = with_utc_offset(unplaced, -5.0)
    assert energy_in_window(placed, run).joules == pytest.approx(600.0)
    assert energy_in_window(load_power_log(path, -5.0), window(T0 + 4.0, 2.0)).status == "not_covered"
    assert "covers only 1.000 s of the run's 2.000 s" in window_words(energy_in_window(load_power_log(path, -5.0), window(T0 + 4.0, 2.0)))
    assert energy_in_window(placed, None).status == "unaligned"


def test_several_gpus_summed_or_one(tmp_path: Path) -> None:
    log = load_power_log(write_smi_power_log(tmp_path / "p.csv", T0, 0.1, [250.0] * 50, gpus=("0", "1")), 0.0)
    run = window(T0 + 1.0, 2.0)
    both = energy_in_window(log, run)
    assert both.devices == ["0", "1"] and both.joules == pytest.approx(1000.0) and "summed over devices 0, 1" in window_words(both)
    one = energy_in_window(log, run, device="1")
    assert one.devices == ["1"] and one.joules == pytest.approx(500.0)
    assert energy_in_window(log, run, device="7").status == "no_reading"


def test_no_power_reading(tmp_path: Path) -> None:
    path = tmp_path / "clocks.csv"
    path.write_text("timestamp, clocks.sm [MHz]\n2026/12/01 10:00:00.000, 1980 MHz\n")
    log = load_power_log(path, 0.0)
    assert log.channels == [] and energy_in_window(log, window(T0, 1.0)).status == "no_reading"


def test_power_fields_not_folded(tmp_path: Path) -> None:
    path = write_smi_power_log(tmp_path / "p.csv", T0, 0.1, [300.0] * 5, fields=("power.draw.average", "power.draw", "power.draw.instant"))
    text = path.read_text().splitlines()
    text[1] = text[1].replace("300.00 W, 300.00 W, 300.00 W", "290.00 W, 295.00 W, 310.00 W")
    path.write_text("\n".join(text) + "\n")
    report = load_smi(path)
    first = report.samples[0]
    assert (first.power_draw_average_w, first.power_draw_w, first.power_draw_instant_w) == (290.0, 295.0, 310.0)
    assert report.power_field == "power.draw" and first.power_w == 295.0 and report.summaries[0].power_field == "power.draw"
    assert first.power_limit_w == 700.0
    log = load_power_log(path, 0.0)
    assert [c.field for c in log.channels] == ["power.draw.instant", "power.draw.average", "power.draw"]
    assert [log.readings[c.field][0].value for c in log.channels] == [310.0, 290.0, 295.0]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "empty file"),
        ("hello, world\n1, 2\n", "line 1: not a power log"),
        ("timestamp, power.draw [W]\n2026/12/01 10:00:00.000, lots W\n", "line 2, column 'power.draw [W]': 'lots W' is not a number"),
        ("timestamp, power.draw [W]\n2026/12/01 10:00:00.000, -3 W\n", "line 2, column 'power.draw [W]'"),
        ("timestamp, total_energy_consumption [MWh]\n2026/12/01 10:00:00.000, 3\n", "energy unit 'MWh'"),
    ],
)
def test_bad_files(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(UserError, match=re.escape(needle)) as caught:
        load_power_log(path, 0.0)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("offset", [float("nan"), 15.0, -20.0])
def test_bad_utc_offset(offset: float) -> None:
    with pytest.raises(UserError, match="UTC offset"):
        load_power_log(SHARED, offset)


def test_the_capture_command_records_what_the_reader_needs(tmp_path: Path) -> None:
    from sparsedebug.sources.importers.power import CAPTURE_COMMANDS
    from sparsedebug.sources.importers.power.capture import SMI_QUERY

    (smi,) = [c for c in CAPTURE_COMMANDS if c.source == "nvidia-smi"]
    assert f"--query-gpu={SMI_QUERY} --format=csv -lms 100" in smi.command and smi.command.startswith("TZ=UTC ")
    units = {"power": "W", "limit": "W", "clocks.sm": "MHz", "clocks.max.sm": "MHz", "utilization.gpu": "%", "temperature.gpu": ""}
    fields = SMI_QUERY.split(",")
    header = [f + (f" [{next((u for k, u in units.items() if k in f), '')}]" if f not in ("timestamp", "index", "clocks_event_reasons.active") else "")
              for f in fields]
    values = {"timestamp": "", "index": "0", "clocks_event_reasons.active": "0x0000000000000000", "clocks.sm": "1980 MHz",
              "clocks.max.sm": "1980 MHz", "utilization.gpu": "99 %", "temperature.gpu": "60", "enforced.power.limit": "700.00 W"}
    lines = [", ".join(h.replace(" []", "") for h in header)]
    for k in range(40):
        stamp = datetime.fromtimestamp(T0 + 0.1 * k, UTC).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
        lines.append(", ".join(stamp if f == "timestamp" else values.get(f, f"{300 + k % 3:.2f} W") for f in fields))
    path = tmp_path / "power.csv"
    path.write_text("\n".join(lines) + "\n")
    log = load_power_log(path, 0.0)
    assert [c.field for c in log.channels] == ["power.draw.instant", "power.draw.average", "power.draw"]
    assert log.power_limit_w == 700.0
    taken = energy_in_window(log, window(T0 + 0.5, 3.0))
    assert taken.status == "measured" and taken.channel is not None and taken.channel.field == "power.draw.instant"
    assert taken.sm_clock_mhz == 1980.0 and taken.idle_power_w is None
