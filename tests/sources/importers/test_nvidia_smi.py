"""nvidia-smi logs: the H200 power-cap run, old-driver headers, several GPUs, bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.sources.importers.nvidia_smi import decode_reasons, load_smi
from tests.conftest import FIXTURES

ART = FIXTURES / "artifacts"


def test_h200_short_run_power_cap() -> None:
    report = load_smi(FIXTURES / "h200" / "nvidia_smi_short.csv")
    assert report.reasons_column == "clocks_event_reasons.active"
    (s,) = report.summaries
    assert s.samples == 83
    assert s.max_sm_clock_mhz == 1980 and s.max_clock_source == "max observed"
    reasons = {r.reason: r for r in s.reasons}
    assert set(reasons) == {"gpu_idle", "sw_power_cap"}
    assert reasons["sw_power_cap"].samples == 11
    assert reasons["sw_power_cap"].fraction == pytest.approx(11 / 83)
    assert reasons["sw_power_cap"].seconds == pytest.approx(11 * 0.25, rel=0.05)
    assert s.power_seconds == reasons["sw_power_cap"].seconds and s.thermal_seconds == 0.0
    assert s.active_samples == 83 - 23
    assert s.min_sm_clock_mhz is not None and s.min_sm_clock_mhz < 1980
    assert s.clock_drop_pct == pytest.approx((1980 - s.min_sm_clock_mhz) / 1980 * 100)
    assert s.max_power_w is not None and s.max_power_w > 600
    capped = [x for x in report.samples if "sw_power_cap" in x.reasons]
    assert capped and all(x.reasons_mask == 4 for x in capped)


def test_given_max_clock_is_the_reference() -> None:
    (s,) = load_smi(FIXTURES / "h200" / "nvidia_smi_short.csv", max_clock_mhz=1980.0 * 2).summaries
    assert s.max_clock_source == "given"
    assert s.median_clock_drop_pct == pytest.approx(50.0)


def test_old_driver_header_and_two_gpus() -> None:
    report = load_smi(ART / "smi_old_driver.csv")
    assert report.reasons_column == "clocks_throttle_reasons.active"
    by_gpu = {s.gpu: s for s in report.summaries}
    assert set(by_gpu) == {"0", "1"}
    hot = by_gpu["0"]
    assert [r.reason for r in hot.reasons] == ["sw_thermal_slowdown", "hw_thermal_slowdown"]
    assert hot.thermal_seconds == pytest.approx(2.0)  # 0x20 for 1 s, then 0x60 (both thermal bits) for 1 s: counted once
    assert {r.reason: r.seconds for r in hot.reasons} == pytest.approx({"sw_thermal_slowdown": 2.0, "hw_thermal_slowdown": 1.0})
    assert hot.min_sm_clock_mhz == 1005 and hot.clock_drop_pct == pytest.approx((1410 - 1005) / 1410 * 100)
    assert by_gpu["1"].power_seconds == pytest.approx(1.0)


def test_nounits_and_not_available_values() -> None:
    report = load_smi(ART / "smi_nounits.csv")
    assert [x.sm_clock_mhz for x in report.samples] == [1965, 1575, 1980]
    assert report.samples[1].power_w is None
    assert report.summaries[0].median_power_w == pytest.approx((148.47 + 356.41) / 2)


def test_decode_reasons() -> None:
    assert decode_reasons(0) == []
    assert decode_reasons(0x1) == ["gpu_idle"]
    assert decode_reasons(0x64) == ["sw_power_cap", "sw_thermal_slowdown", "hw_thermal_slowdown"]
    assert decode_reasons(0x204) == ["sw_power_cap", "bit_0x200"]


@pytest.mark.parametrize(
    ("name", "needle"),
    [("smi_bad_reasons.csv", "line 3: clock event reasons 'lots'"), ("smi_noheader.csv", "no 'timestamp' column")],
)
def test_bad_files(name: str, needle: str) -> None:
    with pytest.raises(UserError, match=needle):
        load_smi(ART / name)


def test_bad_timestamp_and_ragged_rows(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text("timestamp, clocks.sm [MHz]\nyesterday, 1 MHz\n")
    with pytest.raises(UserError, match="line 2: timestamp 'yesterday'"):
        load_smi(path)
    path.write_text("timestamp, clocks.sm [MHz]\n2026/11/29 23:42:36.571, 1 MHz, 5\n")
    with pytest.raises(UserError, match="line 2: 3 fields, header has 2"):
        load_smi(path)
