"""A claim the review document's invariants withheld (``signoff.invariants``) reads as the check that withheld it."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from sparsedebug.records.memo import Claim


class Marks(Protocol):
    """How a phrase marks a name (``phrases.Style``)."""

    def code(self, text: str) -> str:
        """A name or code."""
        ...


def withheld(st: Marks, c: Claim) -> str:
    """A withheld claim: which check withheld it, never the statement it would have made."""
    return f"withheld: the check {st.code(c.withheld or '')} failed on it."


_S = TypeVar("_S", bound=Marks)
_C = TypeVar("_C", bound=Claim | None)
_P = ParamSpec("_P")


def guarded(fn: Callable[Concatenate[_S, _C, _P], str]) -> Callable[Concatenate[_S, _C, _P], str]:
    """A phrase that says which check withheld its claim instead of stating it."""
    @wraps(fn)
    def phrase(st: _S, c: _C, /, *args: _P.args, **kwargs: _P.kwargs) -> str:
        if c is not None and c.withheld:
            return withheld(st, c)
        return fn(st, c, *args, **kwargs)
    return phrase
