"""`sparsedebug schema`: print the JSON Schema of the files sparsedebug reads and writes."""

from __future__ import annotations

import json
from typing import Annotated, Literal

import typer
from pydantic import BaseModel

from sparsedebug.cli.common import handle_errors
from sparsedebug.records.fingerprint import Fingerprint
from sparsedebug.records.run import RunRecord
from sparsedebug.sources.workload.schema import Workload

SCHEMAS: dict[str, type[BaseModel]] = {"workload": Workload, "run": RunRecord, "fingerprint": Fingerprint}
"""Every schema the command can print, by name."""

Kind = Literal["workload", "run", "fingerprint"]


@handle_errors
def schema(
    kind: Annotated[Kind, typer.Argument(help="Which file format: workload, run or fingerprint.")],
) -> None:
    """Print the JSON Schema of a workload YAML, a run record or a fingerprint.

    Use it for editor completion and validation of workload files (for example
    with a yaml-language-server `$schema` comment) or to check records written
    by other tools. The output is JSON on stdout, nothing else.
    """
    typer.echo(json.dumps(SCHEMAS[kind].model_json_schema(), indent=2))


def register(app: typer.Typer) -> None:
    """Add `schema` to the app."""
    app.command("schema")(schema)
