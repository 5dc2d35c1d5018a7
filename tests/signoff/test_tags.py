"""The memo's tags of the analysing machine: numpy's own BLAS, not another package's loaded beside it."""

from __future__ import annotations

from sparsedebug.records.fingerprint import BlasLibrary
from sparsedebug.signoff.tags import numpy_blas


def _lib(version: str, path: str, api: str = "blas") -> BlasLibrary:
    return BlasLibrary(user_api=api, internal_api="openmp" if api == "openmp" else "openblas", version=version, num_threads=2,
                       filepath=path)


NUMPY = _lib("0.3.31", "/venv/site-packages/numpy.libs/libscipy_openblas64_-32a4b2a6.so")
SCIPY = _lib("0.3.30", "/venv/site-packages/scipy.libs/libscipy_openblas-6cdc3b4a.so")
GOMP = _lib("4.5", "/usr/lib/x86_64-linux-gnu/libgomp.so.1", api="openmp")
SYSTEM = _lib("0.3.26", "/usr/lib/x86_64-linux-gnu/libopenblas.so.0")


def test_numpy_s_own_blas_is_named_when_scipy_s_is_loaded_beside_it() -> None:
    assert numpy_blas([SCIPY, NUMPY, GOMP]) == [NUMPY]


def test_a_system_blas_is_named_when_numpy_ships_none() -> None:
    assert numpy_blas([SYSTEM, GOMP]) == [SYSTEM]
    assert numpy_blas([GOMP]) == []
