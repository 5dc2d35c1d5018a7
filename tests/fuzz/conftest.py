"""The fuzzing budget: a fixed number of examples per target, derandomized, so CI time is fixed.

Nine targets x ``SPARSEDEBUG_FUZZ_EXAMPLES`` (default 25) examples run in well under a
minute on two cores. Raise the count (and set ``SPARSEDEBUG_FUZZ_RANDOM=1`` for fresh
inputs on every run) to fuzz longer locally. Every example runs the real command through
the CLI with the documented resource limits set low (``SPARSEDEBUG_MAX_MEMORY_GB``,
``SPARSEDEBUG_MAX_SECONDS``), so a mutation that asks for a huge replay is refused like
any user's, and the example itself must stay under :data:`MAX_SECONDS` and :data:`MAX_BYTES`.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("SPARSEDEBUG_FUZZ_EXAMPLES", "25"))
MAX_SECONDS = 10.0
"""CPU time one example may take: the process's own time, which other jobs on a shared machine do not inflate."""
MAX_BYTES = 256 << 20
"""Python-visible memory (tracemalloc peak, numpy included) one example may hold."""

settings.register_profile(
    "fuzz",
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=os.environ.get("SPARSEDEBUG_FUZZ_RANDOM") != "1",
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
FUZZ = settings.get_profile("fuzz")
