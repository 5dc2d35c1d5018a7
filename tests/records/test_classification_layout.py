"""A classification written before its facts layout (issue 39) is refused with a write-it-again message."""

from __future__ import annotations

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import validate
from sparsedebug.records.base import FACTS_SCHEMA_VERSION
from sparsedebug.records.classification import Classification, Fix


def test_older_classification_is_refused() -> None:
    with pytest.raises(UserError, match="older sparsedebug"):
        validate(Classification, {"schema_version": 1, "kind": "classification"}, "classification.json")
    assert Classification.model_fields["schema_version"].default == FACTS_SCHEMA_VERSION


def test_fix_holds_codes_not_words() -> None:
    fix = Fix(kind="block", value=16, was=4, rule="memory.gather_traffic", metric="busy_p50_ms", direction="down", code="block_size")
    assert "text" not in Fix.model_fields and (fix.was, fix.value) == (4, 16)
