"""Shared test helpers: a CliRunner with a pinned console width and fixture paths."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from sparsedebug.cli.app import app
from sparsedebug.records.notes import CHECK_NOTES_ENV

# every note the suite builds is checked against its code's declaration (records.note_codes); the CLI skips the check
os.environ[CHECK_NOTES_ENV] = "1"

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "fixtures"

CLI_ENV = {"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}


def invoke(args: Sequence[str]) -> Result:
    """Run the CLI in-process with a pinned console width; stdout and stderr kept apart."""
    runner = CliRunner(env=CLI_ENV)
    return runner.invoke(app, list(args), catch_exceptions=True)


def classify_json(cand: str, base: str, *extra: str) -> dict[str, Any]:
    """``classify CAND --baseline BASE ... --json``, which must succeed, as its parsed payload."""
    result = invoke(["classify", cand, "--baseline", base, *extra, "--json"])
    assert result.exit_code == 0, result.stderr
    payload: dict[str, Any] = json.loads(result.stdout)
    return payload


def assert_clean_error(result: Result, code: int, *needles: str) -> None:
    """The command failed with ``code``, said each needle on stderr, and printed no traceback."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.stdout + result.stderr
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)


def assert_json_error(result: Result, code: int, *needles: str) -> dict[str, object]:
    """A ``--json`` call that failed: the clean error on stderr, and on stdout one JSON error object saying the same."""
    assert_clean_error(result, code, *needles)
    error = json.loads(result.stdout)["error"]
    assert error["exit_code"] == code and error["lines"] and error["message"] == error["lines"][0]
    for needle in needles:
        assert any(needle in line for line in error["lines"]), (needle, error)
    return dict(error)


@pytest.fixture
def fixtures_dir() -> Path:
    """The project's fixtures folder."""
    return FIXTURES


QUIET_POLICY_NOTE = (
    "Tests run on shared, loaded machines: the noise-aware harness keeps flagging and recording "
    "interference but never declares timings unstable and does not re-measure, so that results "
    "do not depend on the machine's load. Tests of the verdict itself inject clocks and policies "
    "(tests/core/test_timing.py) or opt out with the 'noisy' marker. Replays sample a whole forward "
    "over at least 1 ms instead of records.defaults.MIN_SAMPLE_MS (10 ms): the same many-calls path, at a "
    "tenth of the time (benchmarks/aa_replays.py measures the real minimum's false alarms and power)."
)


TEST_MIN_SAMPLE_MS = 1.0
"""The shortest sample of a whole forward in tests' replays (see ``QUIET_POLICY_NOTE``)."""


@pytest.fixture(autouse=True)
def _quiet_timing_verdict(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """See ``QUIET_POLICY_NOTE``."""
    from sparsedebug.sources.replay import replay as replay_module

    monkeypatch.setattr(replay_module, "MIN_SAMPLE_MS", TEST_MIN_SAMPLE_MS)
    if request.node.get_closest_marker("noisy") is not None:
        return
    from sparsedebug.core import timing

    quiet = timing.NoisePolicy(max_spread=math.inf, max_flagged_share=1.0, remeasure=0, max_competing_cores=math.inf)
    monkeypatch.setattr(timing, "DEFAULT_POLICY", quiet)


@pytest.fixture(scope="session", autouse=True)
def _blas_threads_per_worker() -> object:
    """Parallel workers share the cores: each worker's BLAS gets its share of them (at least one thread).

    OpenBLAS threads spin while they wait; with every worker running as many BLAS threads as the
    machine has cores, one worker's spinning threads preempt another's timed forward for whole
    scheduler slices (milliseconds against a forward of under one), and replay timings, with the
    verdicts built on them, follow the other workers instead of the workload. A workload that sets
    its own ``threads`` still gets them (the planted oversubscription does).
    """
    import os

    from threadpoolctl import threadpool_limits

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers <= 1:
        yield None
        return
    with threadpool_limits(limits=max(1, (os.cpu_count() or 1) // workers), user_api="blas"):
        yield None


CLAIM_PROBLEMS: list[str] = []
"""Claim problems found in bundles written in this process (``tests/render/markdown/test_claims.py``)."""
_REPORTED = [0]


@pytest.fixture(scope="session", autouse=True)
def _check_claims_of_every_bundle_written() -> object:
    """Every bundle ``playbook run`` writes in-process is read back: its memo and report checked for claims, and memo.md
    for the limits a lead reads it by (``render.memo.claims.lead_problems``)."""
    from sparsedebug.playbook import run as walk

    original = walk.swap_into_place

    def swap_and_check(tmp: Path, out_dir: Path) -> None:
        original(tmp, out_dir)
        from tests.render.markdown.test_claims import bundle_dir_problems

        CLAIM_PROBLEMS.extend(bundle_dir_problems(out_dir))

    walk.swap_into_place = swap_and_check  # type: ignore[assignment]
    yield
    walk.swap_into_place = original  # type: ignore[assignment]


@pytest.fixture(autouse=True)
def _fail_on_claim_problems() -> object:
    """A test whose bundle (or module fixture's bundle) quotes a figure wrongly fails in its teardown."""
    yield
    new = CLAIM_PROBLEMS[_REPORTED[0]:]
    _REPORTED[0] = len(CLAIM_PROBLEMS)
    if new:
        pytest.fail("claims in the bundle written here:\n" + "\n".join(new), pytrace=False)
