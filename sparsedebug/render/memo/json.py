"""The memo model itself as JSON (its JSON Schema: ``sparsedebug schema memo``)."""

from __future__ import annotations

from sparsedebug.records.memo import Memo
from sparsedebug.render.memo.formats import MemoFormat, register


@register
class JsonMemo(MemoFormat):
    """The claims with their figures and provenance, for machines."""

    name = "json"
    help = "the memo model: claims, figures, provenance"
    is_document = True

    def format(self, memo: Memo) -> str:
        """The model as indented JSON."""
        return memo.model_dump_json(indent=2)
