"""Keep freed memory in the process's heap, so large numpy temporaries do not page-fault on every call.

glibc's allocator serves blocks above its mmap threshold (128 KiB at first, raised
by each freed mapping up to the largest freed) with fresh mappings, and gives the
top of the heap back to the kernel once more than twice that threshold lies free
there. A numpy forward allocates and frees temporaries of a few hundred KiB to a
few MiB on every operation; with the default settings the heap shrinks after
each and grows again on the next, and every page of every temporary is a fresh
page fault: on a 128 x 1536 fp32 activation (768 KiB) an allocation then costs
15-20x the elementwise operation that fills it. onnxruntime keeps its own arena
for the same reason.

:func:`retain_freed_memory` raises the mmap threshold to 64 MiB (blocks up to
that size come from the heap and are reused) and the trim threshold to 256 MiB
(at most that much free memory is kept at the heap's top). It changes nothing
where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import lru_cache

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# Blocks up to this size come from the heap (glibc's own ceiling for its dynamic threshold is 32 MiB).
MMAP_THRESHOLD_BYTES = 64 << 20
# Free memory kept at the heap's top before it is returned to the kernel.
TRIM_THRESHOLD_BYTES = 256 << 20


@lru_cache(maxsize=1)
def retain_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds once per process (see the module docstring); False where not glibc."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018  (glibc only: other C libraries' mallopt take other codes)
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
