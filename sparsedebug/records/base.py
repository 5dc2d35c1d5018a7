"""The one base every record derives from, and the schema version they share.

Every file sparsedebug writes is a record on this base: unknown keys are refused, and
top-level documents carry ``schema_version`` so that a file from a newer release is
refused with an upgrade message (see ``sparsedebug.core.io``).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict

# Version of every record layout in this package. Bump on incompatible change.
SCHEMA_VERSION = 1


# Layout of the result records whose sentences became facts (notes, numbers, codes): a result file of an older
# layout is refused with a message to re-run it (its prose fields cannot be read as facts).
FACTS_SCHEMA_VERSION = 2


class Record(BaseModel):
    """Base for all records: unknown fields are refused, not silently dropped.

    ``defer_build``: a record's validator and serializer are built when it is first used, not when
    its module is imported (a command that reads a run builds the run's records only; importing
    every record module at start cost 0.25-0.5 s of about two hundred classes).
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=False, allow_inf_nan=False, defer_build=True)

    # The oldest schema_version this release reads for a top-level record of this class.
    oldest_readable: ClassVar[int] = 1
