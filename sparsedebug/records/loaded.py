"""A bundle as the steps and the renderers hold it: the manifest and every record it lists.

``sparsedebug.sources.bundle.load_bundle`` reads one back from disk; the walk builds one in memory. It holds records
only, so a renderer can take it without importing the reader.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from sparsedebug.records.bundle import Bundle, BundleInput, FixOutcome, InputRole
from sparsedebug.records.classification import Classification
from sparsedebug.records.decision import DecisionOutcome
from sparsedebug.records.energy import EnergyReport
from sparsedebug.records.findings import BisectResult
from sparsedebug.records.fingerprint import Fingerprint
from sparsedebug.records.memo import Memo
from sparsedebug.records.ranks import RankComparison
from sparsedebug.records.reduce import ReduceResult, TraceRepro
from sparsedebug.records.run import RunRecord


class LoadedBundle(BaseModel):
    """A bundle read back from disk: the manifest plus every record it lists (None when absent)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, defer_build=True)

    root: Path
    manifest: Bundle
    fingerprint: Fingerprint | None
    baseline: RunRecord
    candidate: RunRecord
    fixed: RunRecord | None
    bisect: BisectResult | None = None
    classification: Classification | None = None
    reduce: ReduceResult | None = None
    trace_repro: TraceRepro | None = None
    fix: FixOutcome | None = None
    decision: DecisionOutcome | None = None
    ranks: RankComparison | None = None
    energy: EnergyReport | None = None
    memo: Memo | None = None

    def runs(self) -> dict[str, RunRecord]:
        """The bundle's runs by role: baseline, candidate, and fixed when there is one."""
        return {"baseline": self.baseline, "candidate": self.candidate, **({"fixed": self.fixed} if self.fixed is not None else {})}

    def path(self, role: str) -> Path | None:
        """Path of a bundle file by role, when present."""
        name = self.manifest.files.get(role)
        return self.root / name if name else None

    def input(self, role: InputRole) -> BundleInput | None:
        """The manifest entry of an input role."""
        for item in self.manifest.inputs:
            if item.role == role:
                return item
        return None
