"""ROCm kernel name families, kept apart from ``core.kernel_names`` (one hook there) so each can change on its own.

* hipBLASLt / rocBLAS Tensile GEMMs are named ``Cijk_<A layout>_<B layout>_<types>_...``; their
  precision is read by ``core.kernel_names`` (``_BBS_``, ``_HHS_`` dense half, ``_SS_`` fp32).
* hipSPARSELt builds its structured-sparse (2:4) GEMMs with Tensile too, and marks which operand is
  the compressed sparse one by a ``_SPA_`` (sparse A) or ``_SPB_`` (sparse B) token in the name
  (from its Tensile logic files). No real trace of a hipSPARSELt run has confirmed it yet, so a
  sparse class given for these tokens is *inferred from the name*: :func:`sparse_inferred_from_name`
  says so, and what prints it says so too.
"""

from __future__ import annotations

# Tensile kernels (hipBLASLt, rocBLAS, hipSPARSELt) start with this, lower-cased.
TENSILE_PREFIX = "cijk_"
# hipSPARSELt's sparse-operand tokens, lower-cased, with their separators.
SPARSE_TOKENS = ("_spa_", "_spb_")


def rocm_sparse_gemm(lowered: str) -> bool:
    """Whether a lower-cased kernel name is a hipSPARSELt structured-sparse Tensile GEMM (a ``_SPA_``/``_SPB_`` token)."""
    if not lowered.startswith(TENSILE_PREFIX):
        return False
    padded = lowered + "_"
    return any(token in padded for token in SPARSE_TOKENS)


def sparse_inferred_from_name(name: str) -> bool:
    """Whether ``name`` is classed sparse only on the hipSPARSELt name tokens (inferred, not confirmed on a real trace)."""
    return rocm_sparse_gemm(name.lower())
