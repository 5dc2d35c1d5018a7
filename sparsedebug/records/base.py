"""The one base every record derives from, and the schema version they share.

Every file sparsedebug writes is a record on this base: unknown keys are refused, and
top-level documents carry ``schema_version`` so that a file from a newer release is
refused with an upgrade message (see ``sparsedebug.core.io``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = 1
"""Version of every record layout in this package. Bump on incompatible change."""


class Record(BaseModel):
    """Base for all records: unknown fields are refused, not silently dropped."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False, allow_inf_nan=False)
