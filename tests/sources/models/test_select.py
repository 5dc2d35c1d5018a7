"""Layer selections over checkpoint names: keywords, globs, and selections that match nothing."""

from __future__ import annotations

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.kernels.masks import Pattern
from sparsedebug.sources.models.base import Linear
from sparsedebug.sources.models.select import check_pattern_fits, select_layers

LAYERS = [
    Linear(f"blk.{b}.{name}", b, "attention" if name.startswith("attn") else "mlp", f"blk.{b}.{name}", 8, width, False)
    for b in range(3)
    for name, width in (("attn_q", 16), ("attn_output", 16), ("ffn_up", 16), ("ffn_down", 20))
]


def names(selection: str) -> list[str]:
    return [layer.name for layer in select_layers(selection, LAYERS)]


def test_keywords() -> None:
    assert len(names("all")) == 12
    assert names("attention") == [n for n in names("all") if ".attn_" in n]
    assert names("mlp") == [n for n in names("all") if ".ffn_" in n]


def test_globs_and_lists_keep_model_order() -> None:
    assert names("blk.*.ffn_down") == ["blk.0.ffn_down", "blk.1.ffn_down", "blk.2.ffn_down"]
    assert names("blk.2.attn_q, blk.0.*") == ["blk.0.attn_q", "blk.0.attn_output", "blk.0.ffn_up", "blk.0.ffn_down", "blk.2.attn_q"]
    assert names("blk.1.ffn_up.weight") == ["blk.1.ffn_up"]
    assert names("attention,blk.0.ffn_up") == [n for n in names("all") if ".attn_" in n or n == "blk.0.ffn_up"]


@pytest.mark.parametrize(("selection", "needle"), [("blk.9.*", "'blk.9.*' matches no linear layer"), ("", "empty selection"), ("mlp,", "empty selection")])
def test_selections_that_match_nothing_are_user_errors(selection: str, needle: str) -> None:
    with pytest.raises(UserError, match=None) as info:
        select_layers(selection, LAYERS)
    assert needle in str(info.value)
    if "matches no" in needle:
        assert "blk.0.attn_q" in str(info.value)


def test_pattern_must_divide_every_selected_input_width() -> None:
    check_pattern_fits(select_layers("all", LAYERS), Pattern(n=2, m=4))
    with pytest.raises(UserError, match="layer blk.0.ffn_down: 20 inputs are not divisible by M=8"):
        check_pattern_fits(select_layers("all", LAYERS), Pattern(n=4, m=8))
