"""Defaults and limits that the command line's ``--help`` shows, defined here and nowhere else.

Plain constants with no import at all, so that ``sparsedebug COMMAND --help`` can quote
them without importing the code that uses them (pydantic, numpy kernels, the study):
the modules that use them (``core.budget``, ``records.stats``, ``kernels.pruning``,
``reduce.reduce``) import them from here.
"""

from __future__ import annotations

from typing import Literal

# The longest time any measured duration can be, in milliseconds: a week. A profiler trace's event, a forward's
# latency, a kernel's samples in a record: a value beyond it is no measurement (``core.bounds``, ``records.run.TimeMs``).
MAX_DURATION_MS = 7 * 24 * 3600 * 1e3

# Upper bound of every repeat count (workload ``repeats``, ``--repeats``, ``--rounds``, ``--probe-repeats``).
MAX_REPEATS = 10_000

# The shortest a timed sample of ``core.timing.measure`` may last, when the caller asks for it (asv's default sample
# time). A call shorter than this is run that many times inside each sample, the variants' calls alternating call by
# call, and the sample is their median (``core.timing.calls_per_sample``, ``core.timing._run_round``): the machine's
# state changes at the time scale of a sample, and alternating puts every change on both sides of a round;
# ``benchmarks/sample_length.py`` measures the per-round spread each way (docs/steps/locate.md).
MIN_SAMPLE_MS = 10.0

# ... and a sample holds at least this many calls while the slowest variant's fit in ``SAMPLE_CALLS_WITHIN_MS``: a 55
# ms forward's per-round ratio spreads about 0.10 with one call a sample and 0.06 with four alternating
# (``benchmarks/sample_length.py --workload minilm_dense``), the difference between catching a 10% slowdown in 10
# rounds half the time and nearly always.
SAMPLE_CALLS = 4

# The longest a sample is stretched to hold ``SAMPLE_CALLS`` calls (where one variant's call takes over a quarter
# second, a sample is as many calls as ``MIN_SAMPLE_MS`` needs: a regression that large needs no averaging to be
# seen).
SAMPLE_CALLS_WITHIN_MS = 250.0

# Wall-clock budget (seconds) of the rounds a replayed session adds after those asked for: rounds are added until the
# per-round ratio of the two sides settles (``core.judgement.settled``) or this much time has passed; past it,
# unsettled timings are unstable (inconclusive). About four times what the README's gate pair's 15 rounds take on a
# quiet 2-core machine.
SETTLE_BUDGET_S = 20.0

# Significance level of the rank test (two-sided).
DEFAULT_ALPHA = 0.05

# Minimum ratio of medians (either way) that counts as a change, as asv's ``factor``.
DEFAULT_MIN_EFFECT = 1.05

# Fewest samples a side (trace iterations, replay rounds; paired sessions: rounds) on which a difference is judged at
# all (``core.judgement``): the fewest with which every test the rule runs reaches ``DEFAULT_ALPHA`` two-sided (the
# paired signed-rank test needs 6 rounds: 2/2^6 = 0.031; Mann-Whitney 4 a side), and asv's "about six". Fewer give
# ``inconclusive`` with the count to capture, whatever the ratio.
DEFAULT_MIN_SAMPLES = 6

Method = Literal["magnitude", "wanda", "sparsegpt"]
METHODS: tuple[Method, ...] = ("magnitude", "wanda", "sparsegpt")
"""Pruning methods, cheapest first."""

# SparseGPT damping: this fraction of the mean Hessian diagonal is added to the diagonal.
DEFAULT_DAMPING = 0.01

# SparseGPT column block (rounded down to a multiple of M); 64 is fastest here in numpy (128 on GPUs).
DEFAULT_BLOCK = 64

# Timed repetitions of one probe replay of ``reduce`` (re-measured with twice as many when undecided).
DEFAULT_PROBE_REPEATS = DEFAULT_MIN_SAMPLES  # fewer could never be judged (core.judgement)

# Upper bound on ``reduce``'s probes (static and timed together); the search stops early, keeping the best so far,
# when reached.
DEFAULT_MAX_PROBES = 80

# Upper bound of every count of text tokens a quality study reads (``quality --tokens``, ``--calibration-tokens``,
# ``model.eval_tokens``, ``pruning.calibration_tokens``): 16,777,216, hundreds of times the default text
# (pydoc_data.topics gives about 28,000 evaluation tokens); a text shorter than the count asked is used whole, and
# said.
MAX_TEXT_TOKENS = 1 << 24

# Names of the registered real models, sorted (``sources.models.registry.MODELS`` holds their specs; a test keeps the
# two equal).
MODEL_NAMES: tuple[str, ...] = ("minilm-l6", "smollm2-135m")

# Quality study sizes per architecture (``sources.models.registry.DEFAULTS`` builds its records from these).
STUDY_SIZES: dict[str, dict[str, int]] = {
    # The decoder's sizes keep `quality smollm2-135m` with three methods on 2,048
    # evaluation tokens well inside 10 minutes on 2 cores: one calibration pass
    # of 2,048 tokens costs two forward passes per pruned model.
    "llama": {"eval_tokens": 2048, "calibration_tokens": 2048, "calibration_cap": 16384, "window": 512},
    # The encoder is 6x smaller: more sentences cost little and steady the neighbour agreement.
    "bert": {"eval_tokens": 4096, "calibration_tokens": 4096, "calibration_cap": 65536, "window": 256},
}
