"""The built-in numpy N:M sparse kernels: masks, precision emulation, per-row and blocked layouts."""

from sparsedebug.kernels.masks import (
    Compliance,
    Pattern,
    check_compliance,
    nm_mask,
    parse_pattern,
    vnm_mask,
)
from sparsedebug.kernels.nm import Footprint, NMWeight
from sparsedebug.kernels.precision import Precision, matmul_tolerance, round_input
from sparsedebug.kernels.vnm import VNMWeight

__all__ = [
    "Compliance",
    "Footprint",
    "NMWeight",
    "Pattern",
    "Precision",
    "VNMWeight",
    "check_compliance",
    "matmul_tolerance",
    "nm_mask",
    "parse_pattern",
    "round_input",
    "vnm_mask",
]
