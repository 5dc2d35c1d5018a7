"""RAPL package counters read around a replay: readable zones only, wrap corrected with max_energy_range_uj."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparsedebug.core import rapl


def _zone(root: Path, name: str, count: int, top: int = 262_143_328_850, label: str = "package-0") -> Path:
    zone = root / name
    zone.mkdir(parents=True)
    (zone / "energy_uj").write_text(f"{count}\n")
    (zone / "max_energy_range_uj").write_text(f"{top}\n")
    (zone / "name").write_text(label + "\n")
    return zone


def test_difference_without_and_across_a_wrap() -> None:
    assert rapl.counter_difference_uj(1_000, 4_500, 10_000) == (3_500, False)
    assert rapl.counter_difference_uj(9_000, 500, 10_000) == (1_500, True)


def test_energy_of_a_window_sums_package_zones_not_sub_zones(tmp_path: Path) -> None:
    zone0 = _zone(tmp_path, "intel-rapl:0", 5_000_000)
    zone1 = _zone(tmp_path, "intel-rapl:1", 9_999_000, top=10_000_000, label="package-1")
    _zone(tmp_path, "intel-rapl:0:0", 1, label="core")
    begun = rapl.start(tmp_path)
    assert begun is not None and [z.path.name for z in begun.zones] == ["intel-rapl:0", "intel-rapl:1"]
    (zone0 / "energy_uj").write_text("7000000\n")  # +2 J
    (zone1 / "energy_uj").write_text("1000000\n")  # wrapped: +1.001 J
    reading = rapl.stop(begun)
    assert reading is not None
    assert reading.joules == pytest.approx(3.001)
    assert reading.wrapped and reading.zone == "intel-rapl:0 (package-0), intel-rapl:1 (package-1)"


def test_unreadable_counter_is_no_reading(tmp_path: Path) -> None:
    zone = _zone(tmp_path, "intel-rapl:0", 5)
    (zone / "energy_uj").unlink()
    assert rapl.start(tmp_path) is None
    assert rapl.start(tmp_path / "absent") is None
