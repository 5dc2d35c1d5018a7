"""dcgm-exporter metrics, Zeus and CodeCarbon CSV: channels, units, alignment, overlapping windows, bad files."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.records.run import TimeWindow
from sparsedebug.render.words.sources_power import window_words
from sparsedebug.sources.importers.power import energy_in_window, load_power_log, with_utc_offset
from tests.conftest import FIXTURES
from tests.support.powerlogs import write_dcgm_metrics

T0 = datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC).timestamp()


def window(start: float, seconds: float) -> TimeWindow:
    return TimeWindow(start_utc_s=start, end_utc_s=start + seconds, source="test")


def test_dcgm_counter_and_power(tmp_path: Path) -> None:
    watts = [100.0] * 10 + [450.0] * 40 + [100.0] * 10
    idle = [w < 200 for w in watts]
    log = load_power_log(write_dcgm_metrics(tmp_path / "m.prom", T0, 0.1, watts, idle=idle))
    assert log.source == "dcgm" and log.power_limit_w == 700.0
    fields = {c.field: c for c in log.channels}
    assert set(fields) == {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_POWER_USAGE"}
    counter = fields["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]
    assert counter.quantity == "energy_counter" and counter.unit == "J" and counter.update_period_s == pytest.approx(0.1)
    assert fields["DCGM_FI_DEV_POWER_USAGE"].averaging_s == 1.0
    assert log.readings["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"][0].value == pytest.approx(1.0e6)  # 1e9 mJ
    taken = energy_in_window(log, window(T0 + 1.5, 3.0))
    assert taken.status == "measured" and taken.method == "counter_difference"
    assert taken.joules == pytest.approx(450.0 * 3.0, rel=1e-3) and taken.sm_clock_mhz == 1980.0
    assert taken.idle_power_w == pytest.approx(100.0, rel=1e-3) and taken.clock_reasons == []
    assert log.readings["DCGM_FI_DEV_POWER_USAGE"][0].reasons == ["gpu_idle"]


def test_dcgm_without_timestamps_is_unaligned(tmp_path: Path) -> None:
    log = load_power_log(write_dcgm_metrics(tmp_path / "m.prom", T0, 0.1, [300.0] * 3, timestamps=False))
    taken = energy_in_window(log, window(T0, 1.0))
    assert taken.status == "unaligned" and "carry no timestamps" in window_words(taken)


def test_dcgm_single_scrape_as_dcgm_exporter_prints_it(tmp_path: Path) -> None:
    path = tmp_path / "scrape.txt"
    path.write_text('DCGM_FI_DEV_POWER_USAGE{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 139.5\n'
                    'DCGM_FI_DEV_MEMORY_TEMP{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 9223372036854775794\n')
    log = load_power_log(path)
    (reading,) = log.readings["DCGM_FI_DEV_POWER_USAGE"]
    assert reading.value == 139.5 and reading.device == "0" and reading.t_utc_s is None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} lots\n", "line 1, metric DCGM_FI_DEV_POWER_USAGE: value 'lots' is not a number"),
        ("# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{gpu=0} 1\n", "line 2: labels"),
        ("# HELP DCGM_FI_DEV_POWER_USAGE x\n{oops\n", "line 2: '{oops' is not a metric sample"),
        ("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} -4\n", "is negative"),
    ],
)
def test_dcgm_bad_files(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "m.prom"
    path.write_text(text)
    with pytest.raises(UserError, match=re.escape(needle)):
        load_power_log(path)


ZEUS = """start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy
{t0},warmup,1.0,300.0,310.0
{t1},forward,4.0,1800.0,1900.0
{t2},forward_inner,2.0,1000.0,1000.0
"""


def test_zeus_windows(tmp_path: Path) -> None:
    path = tmp_path / "zeus.csv"
    path.write_text(ZEUS.format(t0=T0, t1=T0 + 1.0, t2=T0 + 2.0))
    log = load_power_log(path)
    (channel,) = log.channels
    assert log.source == "zeus" and channel.quantity == "energy_total" and channel.field == "gpu{i}_energy"
    assert {r.device for r in log.readings[channel.field]} == {"0", "1"}
    whole = energy_in_window(log, window(T0 + 1.0, 4.0))
    assert whole.status == "measured" and whole.method == "window_total" and whole.devices == ["0", "1"]
    assert whole.joules == pytest.approx(1800.0 + 1900.0) and "took forward (line 3)" in window_words(whole)
    gpu0 = energy_in_window(log, window(T0 + 1.0, 4.0), device="0")
    assert gpu0.joules == pytest.approx(1800.0)
    first_two = energy_in_window(log, window(T0, 1.0), device="0")
    assert first_two.joules == pytest.approx(300.0)
    short = energy_in_window(log, window(T0 + 0.2, 0.3), device="0")
    assert short.status == "too_short" and "holds only 30%" in window_words(short)


REAL_ZEUS = FIXTURES / "real" / "power" / "zeus__A40+resnet50+gpu0.csv"


@pytest.mark.parametrize("source", ["real", "built"])
def test_zeus_monotonic_start_times_are_said_and_never_placed_in_utc(tmp_path: Path, source: str) -> None:
    """Zeus before 2023-08-22 wrote ``time.monotonic()`` as ``start_time`` (seconds since boot): read as UTC it put a
    2023 log in June 1970. The real log and one built with 5 days of uptime are monotonic, with no UTC time."""
    path = REAL_ZEUS if source == "real" else tmp_path / "zeus.csv"
    if source == "built":
        uptime = 5 * 86400.0
        path.write_text(ZEUS.format(t0=uptime, t1=uptime + 1.0, t2=uptime + 2.0))
    log = load_power_log(path)
    assert log.time_base == "monotonic" and log.utc_offset_h is None
    readings = log.readings["gpu{i}_energy"]
    assert readings and all(r.t_utc_s is None and r.t_local for r in readings)
    energy = energy_in_window(log, window(T0, 4.0))
    assert energy.status == "unaligned" and "seconds since boot (a monotonic clock), not UTC time" in window_words(energy)
    wall = tmp_path / "wall.csv"
    wall.write_text(ZEUS.format(t0=T0, t1=T0 + 1.0, t2=T0 + 2.0))
    assert load_power_log(wall).time_base == "wall_clock"


def test_zeus_mixing_time_bases_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "zeus.csv"
    path.write_text(ZEUS.format(t0=5 * 86400.0, t1=T0, t2=T0 + 1.0))
    with pytest.raises(UserError, match=r"line 3, column 'start_time': .* mixes seconds since boot"):
        load_power_log(path)


CODECARBON = """timestamp,project_name,run_id,duration,emissions,emissions_rate,cpu_power,gpu_power,ram_power,cpu_energy,gpu_energy,ram_energy,energy_consumed,country_name
{stamp},codecarbon,9adda612-4ce8-49d0-9a55-e3b071a7b885,10.0,0.0001,1e-05,42.5,360.0,3.0,0.0001,0.001,0.00001,0.00111,Canada
"""


@pytest.mark.parametrize("zone", ["", "+02:00", "Z"])
def test_codecarbon_kwh_and_zones(tmp_path: Path, zone: str) -> None:
    end = datetime(2026, 12, 1, 10, 0, 10, tzinfo=UTC)
    local = end + (timedelta(hours=2) if zone == "+02:00" else timedelta(0))
    path = tmp_path / "emissions.csv"
    path.write_text(CODECARBON.format(stamp=local.strftime("%Y-%m-%dT%H:%M:%S") + zone))
    log = load_power_log(path)
    assert [c.field for c in log.channels] == ["gpu_energy", "energy_consumed"]
    (gpu,) = log.readings["gpu_energy"]
    assert gpu.value == pytest.approx(0.001 * 3.6e6) and gpu.window_s == 10.0 and gpu.label.startswith("9adda612")
    run = window(T0, 10.0)
    if not zone:
        assert gpu.t_utc_s is None and energy_in_window(log, run).status == "unaligned"
        log = with_utc_offset(log, 0.0)
    one_row = energy_in_window(log, run)  # one 10 s row over a 10 s run: under 3 update periods (docs/inputs/power.md)
    assert one_row.status == "too_short" and one_row.channel is not None and one_row.channel.field == "gpu_energy"
    assert energy_in_window(log, window(T0 + 4.0, 2.0)).status == "too_short"


def test_codecarbon_rows_over_three_periods_are_measured(tmp_path: Path) -> None:
    header, row = CODECARBON.splitlines()
    stamps = [datetime(2026, 12, 1, 10, 0, 10 * k, tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%SZ") for k in (1, 2, 3)]
    path = tmp_path / "emissions.csv"
    path.write_text("\n".join([header, *(row.format(stamp=stamp) for stamp in stamps)]) + "\n")
    taken = energy_in_window(load_power_log(path), window(T0, 30.0))
    assert taken.status == "measured" and taken.channel is not None and taken.channel.field == "gpu_energy"
    assert taken.joules == pytest.approx(3 * 3600.0) and taken.mean_power_w == pytest.approx(360.0)
    short = energy_in_window(load_power_log(path), window(T0, 29.0))
    assert short.status == "too_short" and "fewer than 3 update periods" in window_words(short)


@pytest.mark.parametrize("cells", [",", "0,", ",H100"])
def test_codecarbon_without_a_gpu_is_not_tracked_not_zero(tmp_path: Path, cells: str) -> None:
    """CodeCarbon writes gpu_energy 0 when it found no GPU (gpu_count, gpu_model empty): not tracked, not 0 J."""
    header, row = CODECARBON.splitlines()
    path = tmp_path / "emissions.csv"
    path.write_text(f"{header},gpu_count,gpu_model\n{row.format(stamp='2026-12-01T10:00:40Z')},{cells}\n")
    log = load_power_log(path)
    tracked = cells == ",H100"  # a model named: a GPU was tracked (count written blank by the row's writer)
    assert bool(log.channels) is tracked
    if not tracked:
        taken = energy_in_window(log, window(T0, 30.0))
        assert taken.status == "no_reading" and taken.joules is None and "not tracked, not 0 J" in window_words(taken)


def test_codecarbon_bad_timestamp(tmp_path: Path) -> None:
    path = tmp_path / "emissions.csv"
    path.write_text(CODECARBON.format(stamp="yesterday"))
    with pytest.raises(UserError, match=re.escape("line 2, column 'timestamp': 'yesterday'")):
        load_power_log(path)
    path.write_text(CODECARBON.format(stamp="2026-12-01T10:00:10").replace(",10.0,", ",ten,"))
    with pytest.raises(UserError, match=re.escape("line 2, column 'duration': 'ten' is not a number")):
        load_power_log(path)


def test_zeus_back_to_back_windows_are_summed(tmp_path: Path) -> None:
    rows = [f"{T0 + 0.5 * k},step_{k},0.5,{200.0 + k}" for k in range(12)]
    path = tmp_path / "zeus.csv"
    path.write_text("start_time,window_name,elapsed_time,gpu0_energy\n" + "\n".join(rows) + "\n")
    taken = energy_in_window(load_power_log(path), window(T0 + 1.0, 4.0))  # steps 2..9, whole
    assert taken.status == "measured" and taken.readings == 8
    assert taken.joules == pytest.approx(sum(200.0 + k for k in range(2, 10))) and "overlap" not in window_words(taken)
    edge = energy_in_window(load_power_log(path), window(T0 + 1.25, 4.0))  # half of step 2 and of step 10
    assert edge.joules == pytest.approx(sum(200.0 + k for k in range(3, 10)) + (202.0 + 210.0) / 2)
