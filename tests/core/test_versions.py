"""core.versions: release numbers compared the way a stack fact's bounds need them."""

from __future__ import annotations

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.core.versions import in_range, release, same_release


def test_versions() -> None:
    assert release("v0.19.1+rhaiv.1") == (0, 19, 1) and release("2.11.0+cu130") == (2, 11)
    assert in_range("0.19.1", "0.19.1", None) and not in_range("0.19.0", "0.19.1", None)
    assert in_range("0.18.2", None, "0.19.1") and not in_range("0.19.1", None, "0.19.1")
    assert same_release("2.11", "2.11.0+cu130")
    with pytest.raises(UserError, match="expected release numbers"):
        release("latest")
