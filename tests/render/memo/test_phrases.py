"""Memo phrases: the first divergent stage names each finding kind with its own reasons."""

from __future__ import annotations

from sparsedebug.records.memo import Claim
from sparsedebug.render.memo import phrases


def test_a_reason_stays_with_the_finding_kind_it_belongs_to() -> None:
    claim = Claim(kind="first_stage", code="divergence", items=["fc0"],
                  terms={"stage": "lower", "kinds": "fallback,per_call_conversion", "reasons.fallback": "dtype_unsupported"})
    assert phrases.first_stage(phrases.PLAIN, claim) == (
        "stage lower: dense fallback (dtype the sparse kernel rejects), weights converted on every call on fc0."
    )
