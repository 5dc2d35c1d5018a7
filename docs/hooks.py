"""MkDocs hook: the pages' generated parts, built from the code on every `mkdocs build`.

A page asks for a generated part with an HTML comment on a line of its own, `<!-- generated: NAME -->`;
the hook replaces the line with `GENERATED[NAME]()`. So the CLI reference is the typer app's own `--help`,
the record schemas are the pydantic models' JSON Schema, the classify rules are the rule table and the
capture commands are the ones the tool itself quotes: none of them can drift from the code. An unknown
name fails the build. tests/test_docs.py checks the same functions (every command and option is listed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

MARKER = re.compile(r"^<!-- generated: ([\w-]+) -->$", flags=re.M)
HELP_ENV = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
"""The terminal the reference is rendered for: 100 columns, no colour."""


def commands() -> Iterator[tuple[list[str], Any]]:
    """Every command of the typer app, groups and their subcommands, in the order `--help` lists them."""
    import typer

    from sparsedebug.cli.app import app

    def walk(command: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
        yield path, command
        if hasattr(command, "list_commands"):  # a group (typer ships its own click: no isinstance)
            ctx = command.make_context("sparsedebug", [], resilient_parsing=True)
            for name in command.list_commands(ctx):
                yield from walk(command.get_command(ctx, name), [*path, name])

    yield from walk(typer.main.get_command(app), [])


def help_text(path: list[str]) -> str:
    """What `sparsedebug PATH --help` prints in a 100-column terminal without colour."""
    from typer.testing import CliRunner

    from sparsedebug.cli.app import app

    result = CliRunner().invoke(app, [*path, "--help"], env=HELP_ENV, prog_name="sparsedebug")
    if result.exit_code != 0:
        raise RuntimeError(f"sparsedebug {' '.join(path)} --help exited {result.exit_code}: {result.output}")
    return "\n".join(line.rstrip() for line in result.stdout.splitlines()).strip("\n")


def cli_reference() -> str:
    """One section per command: its `--help` as printed, then its options one per line."""
    out: list[str] = []
    for path, command in commands():
        title = " ".join(["sparsedebug", *path])
        out += [f"## `{title}`", "", "```text", help_text(path), "```", ""]
        options = [param for param in command.params if getattr(param, "opts", None) and param.param_type_name == "option"]
        if options:
            out.append("Options: " + ", ".join(f"`{' / '.join([*p.opts, *p.secondary_opts])}`" for p in options) + ".")
            out.append("")
    return "\n".join(out)


def record_schemas() -> str:
    """Each file format `sparsedebug schema KIND` prints: its fields (name, type, description) per model."""
    from sparsedebug.cli.schema import schemas

    out: list[str] = []
    printed: dict[type, str] = {}
    for kind, model in schemas().items():
        if model in printed:  # one model under two names (memo: the review document's former name)
            out += [f"## {kind}", "", f"`sparsedebug schema {kind}` prints the same JSON Schema as `{printed[model]}`.", ""]
            continue
        printed[model] = kind
        schema = model.model_json_schema()
        out += [f"## {kind}", "", f"`sparsedebug schema {kind}` prints this JSON Schema in full.", ""]
        definitions = {schema.get("title", kind): schema, **schema.get("$defs", {})}
        for name, definition in definitions.items():
            properties = definition.get("properties")
            if not properties:
                continue
            required = set(definition.get("required", []))
            out += [f"### `{name}`", "", "| field | type | required | description |", "| --- | --- | --- | --- |"]
            for field, spec in properties.items():
                out.append(f"| `{field}` | {_type(spec)} | {'yes' if field in required else ''} | {_cell(spec.get('description', ''))} |")
            out.append("")
    return "\n".join(out)


def _type(spec: dict[str, Any]) -> str:
    """A JSON Schema type, short: `$ref`s by name, unions with |, enums as their values."""
    if "$ref" in spec:
        return f"`{spec['$ref'].rsplit('/', 1)[-1]}`"
    if "enum" in spec:
        return _cell(" \\| ".join(json.dumps(v) for v in spec["enum"]))
    if "const" in spec:
        return _cell(json.dumps(spec["const"]))
    for key in ("anyOf", "oneOf", "allOf"):
        if key in spec:
            return " \\| ".join(_type(s) for s in spec[key])
    kind = spec.get("type", "any")
    if kind == "array":
        return f"array of {_type(spec.get('items', {}))}"
    if kind == "object" and isinstance(spec.get("additionalProperties"), dict):
        return f"map to {_type(spec['additionalProperties'])}"
    return str(kind)


def _cell(text: str) -> str:
    """Text fit for one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def classify_rules() -> str:
    """The classify rule table, as `sparsedebug.render.markdown.rules` renders it."""
    from sparsedebug.classify.rules import RULES
    from sparsedebug.render.markdown.rules import rules_markdown

    return rules_markdown(RULES)


def capture_power() -> str:
    """The command lines that record a usable power log, as the walk quotes them."""
    from sparsedebug.render.words.sources_power import CAPTURE_RECORDS
    from sparsedebug.sources.importers.power.capture import CAPTURE_COMMANDS

    out: list[str] = []
    for capture in CAPTURE_COMMANDS:
        out += [f"**{capture.source}**: {CAPTURE_RECORDS[capture.source]}.", "", "```bash", capture.command, "```", ""]
    return "\n".join(out)


def capture_hint(name: str) -> Callable[[], str]:
    """One of classify's capture hints (`CAPTURE_SMI`, `CAPTURE_NCU`...), as the classification prints it."""

    def render() -> str:
        from sparsedebug.classify import context
        from sparsedebug.render.words.notes import say

        text = say(getattr(context, name))
        return f"As `classify` says when this evidence is missing: {text[0].lower()}{text[1:]}."

    return render


GENERATED: dict[str, Callable[[], str]] = {
    "cli-reference": cli_reference,
    "record-schemas": record_schemas,
    "classify-rules": classify_rules,
    "capture-power": capture_power,
    "capture-smi": capture_hint("CAPTURE_SMI"),
    "capture-ncu": capture_hint("CAPTURE_NCU"),
}


def expand(markdown: str) -> str:
    """The page with every generated part filled in; an unknown part is an error (the build fails)."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATED:
            raise ValueError(f"unknown generated part {name!r}; known: {', '.join(GENERATED)}")
        return GENERATED[name]().rstrip("\n")

    return MARKER.sub(fill, markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """MkDocs event: fill in the page's generated parts."""
    return expand(markdown)
