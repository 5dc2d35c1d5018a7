"""The memo formats' base class and registry: adding a format is one module with one registered class."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from typing import ClassVar, TypeVar

from sparsedebug.records.memo import Memo

BUILTIN_MODULES: tuple[str, ...] = ("markdown", "terminal", "json", "github")
"""The modules of the built-in formats, imported on first use of the registry."""

_REGISTRY: dict[str, type[MemoFormat]] = {}

F = TypeVar("F", bound="type[MemoFormat]")


class MemoFormat(ABC):
    """One output of the memo model: ``format(memo)`` returns the whole text, computing nothing."""

    name: ClassVar[str]
    """The name ``memo --format`` takes."""
    help: ClassVar[str]
    """What the format is for, in the command's help."""
    is_document: ClassVar[bool] = False
    """True for a format that serialises the review document itself (JSON): nothing in it to check against it."""

    @abstractmethod
    def format(self, memo: Memo) -> str:
        """The memo in this format."""


def register(cls: F) -> F:
    """Class decorator: make ``cls`` available as ``memo --format cls.name``."""
    _REGISTRY[cls.name] = cls
    return cls


def formats() -> dict[str, type[MemoFormat]]:
    """Every registered format by name (the built-in ones imported here, so start-up stays cheap)."""
    for module in BUILTIN_MODULES:
        importlib.import_module(f"sparsedebug.render.memo.{module}")
    return dict(_REGISTRY)


def render(memo: Memo, name: str) -> str:
    """``memo`` in the format called ``name`` (a KeyError for an unknown name: the CLI checks the choice first)."""
    return formats()[name]().format(memo)


def verified(memo: Memo, name: str, text: str, where: str) -> str:
    """``text`` (``memo`` rendered in the format ``name``) once the claims check (``render.memo.claims``) finds every
    number and claim of it carried by ``memo``; else ``UnverifiedClaim`` naming ``where`` and every problem, so that
    nothing is published."""
    from sparsedebug.core.errors import UnverifiedClaim
    from sparsedebug.render.memo.claims import check_claims

    if formats()[name].is_document:
        return text
    problems = check_claims(text, memo)
    if problems:
        raise UnverifiedClaim(where, problems)
    return text


def render_verified(memo: Memo, name: str, where: str) -> str:
    """``memo`` in the format ``name``, verified by the claims check before anyone publishes it (:func:`verified`)."""
    return verified(memo, name, render(memo, name), where)


def _clip(line: str, width: int = 120) -> str:
    return line if len(line) <= width else line[: width - 3] + "..."


def disagreements(memo: Memo, name: str, text: str) -> list[str]:
    """How a written ``text`` in the format ``name`` departs from ``memo``: every problem of the claims check (a number
    no figure carries, wording its facts do not carry), then the first line that is not what ``memo`` renders (an
    edited number, decision, direction or name). Empty when the text is the document's, word for word."""
    from sparsedebug.render.memo.claims import check_claims

    problems = [] if formats()[name].is_document else check_claims(text, memo)
    rendered = render(memo, name).splitlines()
    written = text.splitlines()
    for number, (printed, own) in enumerate(zip(written, rendered, strict=False), start=1):
        if printed != own:
            problems.append(f"line {number} is not what the document renders: printed {_clip(printed)!r}, "
                            f"the document says {_clip(own)!r}")
            break
    else:
        if len(written) != len(rendered):
            problems.append(f"{len(written)} lines printed, the document renders {len(rendered)}")
    return problems
