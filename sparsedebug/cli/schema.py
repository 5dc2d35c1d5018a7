"""`sparsedebug schema`: print the JSON Schema of the files sparsedebug reads and writes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from sparsedebug.cli.common import handle_errors

if TYPE_CHECKING:
    from pydantic import BaseModel

Kind = Literal["workload", "run", "fingerprint", "review", "memo", "bisect", "classification", "gate", "decision", "reduce"]


def schemas() -> dict[str, type[BaseModel]]:
    """Every schema the command can print, by name (imported here, so `schema --help` stays cheap)."""
    from sparsedebug.records.classification import Classification
    from sparsedebug.records.decision import DecisionOutcome
    from sparsedebug.records.findings import BisectResult
    from sparsedebug.records.fingerprint import Fingerprint
    from sparsedebug.records.gate import GateResult
    from sparsedebug.records.memo import Memo
    from sparsedebug.records.reduce import ReduceResult
    from sparsedebug.records.run import RunRecord
    from sparsedebug.sources.workload.schema import Workload

    return {
        "workload": Workload,
        "run": RunRecord,
        "fingerprint": Fingerprint,
        "review": Memo,
        "memo": Memo,
        "bisect": BisectResult,
        "classification": Classification,
        "gate": GateResult,
        "decision": DecisionOutcome,
        "reduce": ReduceResult,
    }


@handle_errors
def schema(
    kind: Annotated[
        Kind,
        typer.Argument(
            help="Which file format: workload, run, fingerprint, review (the review document a bundle stores as memo.json "
            "and `memo --format json` prints; memo is its former name), or the "
            "--json output of bisect, classify, gate, the decision in a bundle, or reduce."
        ),
    ],
) -> None:
    """Print the JSON Schema of a workload YAML, a run record, a fingerprint, the review document or a step's --json output.

    Use it for editor completion and validation of workload files (for example
    with a yaml-language-server `$schema` comment) or to check records written
    by other tools. The output is JSON on stdout, nothing else.
    """
    typer.echo(json.dumps(schemas()[kind].model_json_schema(), indent=2))


def register(app: typer.Typer) -> None:
    """Add `schema` to the app."""
    app.command("schema")(schema)
