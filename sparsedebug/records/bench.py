"""The kernel benchmark's rows (``sparsedebug bench``): timings of the five variants for one token count."""

from __future__ import annotations

from pydantic import Field

from sparsedebug.records.base import Record
from sparsedebug.records.stats import Percentiles
from sparsedebug.records.timing import TimingQuality


class KernelBenchRow(Record):
    """Timings for one token count: medians (ms), ratios, tails, environment."""

    tokens: int
    shape: list[int]
    pattern: str
    block: int
    rounds: int
    dense_ms: float
    limit_ms: float
    csr_ms: float | None = Field(description="None: scipy (the CSR anchor) is not installed: pip install 'sparsedebug[anchors]'.")
    nm_ms: float
    vnm_ms: float
    vnm_vs_dense: float
    vnm_vs_limit: float
    nm_vs_csr: float | None
    nm_vs_dense: float
    csr_vs_dense: float | None
    blas_threads: int
    blas: str
    percentiles_ms: dict[str, Percentiles]
    timing: TimingQuality | None = Field(None, description="Interference while timing this row; ratios of an unstable row are not to be trusted.")
