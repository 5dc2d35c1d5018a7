"""The interleaved timing harness: order, sample counts, warm-up, bad arguments."""

from __future__ import annotations

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.core.timing import interleaved


def test_rounds_interleave_with_rotating_start_after_warmup() -> None:
    calls: list[str] = []
    samples = interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, rounds=3, warmup=2)
    assert calls == ["a", "b"] * 2 + ["a", "b", "b", "a", "a", "b"]
    assert list(samples) == ["a", "b"]
    assert all(len(v) == 3 and all(s >= 0.0 for s in v) for v in samples.values())


def test_samples_are_milliseconds() -> None:
    import time

    samples = interleaved({"sleep": lambda: time.sleep(0.02)}, rounds=2, warmup=0)
    assert all(s >= 19.0 for s in samples["sleep"])


@pytest.mark.parametrize(("kwargs", "needle"), [({"rounds": 0}, "rounds=0"), ({"rounds": 1, "warmup": -1}, "warmup=-1")])
def test_bad_arguments(kwargs: dict, needle: str) -> None:
    with pytest.raises(UserError, match=needle):
        interleaved({"a": lambda: None}, **kwargs)
    with pytest.raises(UserError, match="no variants"):
        interleaved({}, rounds=1)
