"""`sparsedebug import power`: the shared H200 log's channel, a window's energy, too short, JSON, bad input."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from tests.conftest import FIXTURES, assert_clean_error, assert_json_error, invoke
from tests.support.powerlogs import write_dcgm_metrics

SMI = str(FIXTURES / "h200" / "nvidia_smi_short.csv")


def test_import_power_table_and_window() -> None:
    result = invoke(["import", "power", SMI, "--utc-offset", "0", "--from", "2026-11-29T23:42:36Z", "--to", "2026-11-29T23:42:41Z"])
    assert result.exit_code == 0, result.stderr
    assert "power.draw" in result.stdout and "power, averaged" in result.stdout and "250 ms" in result.stdout
    assert "measured" in result.stdout and "1,866 J" in result.stdout and "373.2 W" in result.stdout


def test_import_power_too_short_and_unplaced_json() -> None:
    short = json.loads(invoke(["import", "power", SMI, "--utc-offset", "0", "--from", "2026-11-29T23:42:37Z",
                               "--to", "2026-11-29T23:42:37.045Z", "--json"]).stdout)
    assert short["energy"]["status"] == "too_short" and short["energy"]["joules"] is None
    assert short["log"]["readings"] == {} and short["log"]["channels"][0]["field"] == "power.draw"
    unplaced = json.loads(invoke(["import", "power", SMI, "--from", "1796000000", "--to", "1796000010", "--json"]).stdout)
    assert unplaced["energy"]["status"] == "unaligned"
    full = json.loads(invoke(["import", "power", SMI, "--json", "--readings"]).stdout)
    assert len(full["log"]["readings"]["power.draw"]) == 83 and full["energy"] is None


def test_import_power_dcgm_one_device(tmp_path: Path) -> None:
    t0 = datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC).timestamp()
    path = write_dcgm_metrics(tmp_path / "m.prom", t0, 0.1, [400.0] * 50, gpus=("0", "1"))
    payload = json.loads(invoke(["import", "power", str(path), "--from", str(t0 + 1), "--to", str(t0 + 3), "--device", "1", "--json"]).stdout)
    assert payload["energy"]["status"] == "measured" and payload["energy"]["devices"] == ["1"]
    assert abs(payload["energy"]["joules"] - 800.0) < 1.0


def test_import_power_bad_input(tmp_path: Path) -> None:
    assert_clean_error(invoke(["import", "power", SMI, "--from", "2026-11-29T23:42:36Z"]), 2, "--from and --to go together")
    assert_clean_error(invoke(["import", "power", SMI, "--from", "10", "--to", "5"]), 2, "is not after --from")
    assert_clean_error(invoke(["import", "power", SMI, "--from", "soon", "--to", "later"]), 2, "--from 'soon'")
    assert_clean_error(invoke(["import", "power", SMI, "--utc-offset", "99"]), 2, "UTC offset 99: expected a finite number of hours between -14 and 14")
    bad = tmp_path / "bad.csv"
    bad.write_text("timestamp, power.draw [W]\n2026/12/01 10:00:00.000, lots W\n")
    assert_json_error(invoke(["import", "power", str(bad), "--json"]), 2, "line 2, column 'power.draw [W]'")
