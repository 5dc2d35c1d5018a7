"""Markdown table cells: the one escape every Markdown renderer uses."""

from __future__ import annotations


def md_cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell: pipes escaped, line breaks as spaces."""
    return text.replace("|", "\\|").replace("\n", " ")
