"""Hypothesis strategies that damage valid inputs the ways files get damaged: bytes, lines, and structure."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.sampled_from([0, -1, 1, 3, 2**31, 10**12, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["", "fp16", "2:4", "64:2:4", "nan", "1e400", "dense", "kernel", "X", "0x00000001", "∞"]),
)
JSON_VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6
)


@st.composite
def damaged_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` after a few byte-level accidents: cut short, bytes flipped, spans deleted, duplicated or inserted."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["truncate", "flip", "delete", "duplicate", "insert"]))
        if not out:
            out.extend(draw(st.binary(min_size=1, max_size=16)))
            continue
        i = draw(st.integers(0, len(out) - 1))
        j = draw(st.integers(i, min(len(out), i + 64)))
        if op == "truncate":
            del out[i:]
        elif op == "flip":
            out[i] = draw(st.integers(0, 255))
        elif op == "delete":
            del out[i:j]
        elif op == "duplicate":
            out[j:j] = out[i:j]
        else:
            out[i:i] = draw(st.binary(min_size=1, max_size=16))
    return bytes(out)


@st.composite
def damaged_lines(draw: st.DrawFn, text: str) -> str:
    """``text`` with whole lines dropped, repeated, swapped, cut, or a field in them replaced."""
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            lines.append(draw(st.text(max_size=40)))
            continue
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["drop", "repeat", "swap", "cut", "field"]))
        if op == "drop":
            del lines[i]
        elif op == "repeat":
            lines.insert(i, lines[i])
        elif op == "swap":
            k = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[k] = lines[k], lines[i]
        elif op == "cut":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        else:
            sep = "," if "," in lines[i] else " "
            parts = lines[i].split(sep)
            parts[draw(st.integers(0, len(parts) - 1))] = draw(
                st.sampled_from(["", "nan", "-1", "1e400", "abc", '"', "0x", "N/A", "[Not Supported]", "999999999999"]) | st.text(max_size=8)
            )
            lines[i] = sep.join(parts)
    return "\n".join(lines) + draw(st.sampled_from(["", "\n"]))


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(obj, dict):
        for key, value in obj.items():
            found.extend(_paths(value, (*prefix, key)))
    elif isinstance(obj, list):
        for index, value in enumerate(obj[:4]):
            found.extend(_paths(value, (*prefix, index)))
    return found


@st.composite
def damaged_document(draw: st.DrawFn, document: Any) -> Any:
    """A parsed JSON/YAML document with values replaced, keys removed or added, lists emptied or grown."""
    doc = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        if not path:
            if draw(st.booleans()):
                doc = draw(JSON_VALUES)
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        op = draw(st.sampled_from(["replace", "delete", "add", "grow"]))
        if op == "replace":
            parent[key] = draw(JSON_VALUES)
        elif op == "delete":
            del parent[key]
        elif op == "add" and isinstance(parent[key], dict):
            parent[key][draw(st.text(min_size=1, max_size=8))] = draw(JSON_VALUES)
        elif op == "grow" and isinstance(parent[key], list) and parent[key]:
            parent[key] = parent[key] + parent[key][: draw(st.integers(1, 3))]
        else:
            parent[key] = draw(JSON_VALUES)
    return doc
