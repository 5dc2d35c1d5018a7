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
