"""Power and energy evidence: importers of power logs, their alignment to a run's window, and its energy.

``load_power_log`` reads a log (format told by its content) into a :class:`~sparsedebug.records.power.PowerLog`,
``energy_in_window`` takes the energy of one run's absolute time window from it, and ``CAPTURE_COMMANDS`` says
how to record a log that measures a window.
"""

from __future__ import annotations

from sparsedebug.sources.importers.power.capture import CAPTURE_COMMANDS, CaptureCommand
from sparsedebug.sources.importers.power.channels import MIN_UPDATE_PERIODS
from sparsedebug.sources.importers.power.load import load_power_log, with_utc_offset
from sparsedebug.sources.importers.power.window import energy_in_window, idle_power

__all__ = ["CAPTURE_COMMANDS", "MIN_UPDATE_PERIODS", "CaptureCommand", "energy_in_window", "idle_power", "load_power_log", "with_utc_offset"]
