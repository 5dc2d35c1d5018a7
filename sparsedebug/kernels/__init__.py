"""The built-in numpy N:M sparse kernels: masks, precision emulation, per-row and blocked layouts.

The names below are imported from their modules on first use (PEP 562), so importing one
module of the package (``kernels.masks``, say) does not import the kernels themselves.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sparsedebug.kernels.masks import Compliance, Pattern, check_compliance, nm_mask, parse_pattern, vnm_mask
    from sparsedebug.kernels.nm import Footprint, NMWeight
    from sparsedebug.kernels.precision import Precision, matmul_tolerance, round_input
    from sparsedebug.kernels.vnm import VNMWeight

_HOME = {
    "Compliance": "masks", "Pattern": "masks", "check_compliance": "masks", "nm_mask": "masks", "parse_pattern": "masks",
    "vnm_mask": "masks", "Footprint": "nm", "NMWeight": "nm", "Precision": "precision", "matmul_tolerance": "precision",
    "round_input": "precision", "VNMWeight": "vnm",
}

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


def __getattr__(name: str) -> object:
    """Import a re-exported name from its module when it is first asked for."""
    if name not in _HOME:
        raise AttributeError(f"module 'sparsedebug.kernels' has no attribute {name!r}")
    return getattr(importlib.import_module(f"sparsedebug.kernels.{_HOME[name]}"), name)
