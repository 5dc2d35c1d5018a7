"""README.md and docs/ stay true by themselves: every shell block runs, every command and option exists, the
CLI reference lists what `--help` shows, and no page quotes a machine-dependent timing by hand.

How a page says what its commands do (written for the reader first, the test reads the same):

- A ```bash block's commands run in order, in one scratch folder per page that holds `fixtures/`,
  `playbooks/` and `benchmarks/`, with `sparsedebug` meaning this checkout. Each must exit 0, or the code its
  trailing comment names (`# exit 1: why`, `# exits 2: why`).
- A ```python block runs as one script (`python -`) in the same folder, after the page's shell blocks before it; a
  library example is tested like a command.
- A ```text block right after a bash or python block is its output, trimmed to the lines that last: each line shown must
  appear in the output, in order (spaces and letter case may differ); a line `...` stands for lines left out and `...` inside a
  line for any text. To update a page after an output changed, copy the new lines in: nothing else holds them.
- `<!-- doc-test: skip: REASON -->` on the line before a block leaves it out (REASON is required);
  `<!-- doc-test: slow -->` runs the page with the slow tests (`pytest -m slow`, as .ci/run does).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import pytest
import typer
import yaml
from typer.testing import CliRunner

from sparsedebug.cli.app import app

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
RESULTS = DOCS / "benchmarks" / "results.md"
PAGES = [REPO / "README.md", *sorted(p for p in DOCS.rglob("*.md") if p != RESULTS)]
SHELL = ("bash", "sh", "shell")
PYTHON = "python"
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", flags=re.M | re.S)
MARKER = re.compile(r"<!-- doc-test: (skip|slow)(?::\s*(.*?))?\s*-->\s*$")
EXIT = re.compile(r"#\s*exits? (\d+):")


def _hooks() -> Any:
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Block:
    """One fenced shell or python block of a page: its commands, its marker and the output shown after it."""

    page: Path
    line: int
    text: str
    lang: str = "bash"
    marker: str | None = None
    reason: str = ""
    output: str | None = None
    commands: list[str] = field(default_factory=list)

    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def _commands(text: str) -> list[str]:
    joined = text.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def blocks(page: Path) -> list[Block]:
    """The shell and python blocks of a page, each with its marker and the text block shown right after it."""
    source = page.read_text()
    fences = list(FENCE.finditer(source))
    found: list[Block] = []
    for i, fence in enumerate(fences):
        lang = fence.group(1)
        if lang not in (*SHELL, PYTHON):
            continue
        before = source[fences[i - 1].end() if i else 0 : fence.start()].strip().splitlines()
        marker = MARKER.search(before[-1]) if before else None
        commands = _commands(fence.group(2)) if lang in SHELL else [f"python - <<'PY'\n{fence.group(2)}PY"]
        block = Block(page, source.count("\n", 0, fence.start()) + 1, fence.group(2), lang, commands=commands)
        if marker:
            block.marker, block.reason = marker.group(1), (marker.group(2) or "").strip()
        after = fences[i + 1] if i + 1 < len(fences) else None
        if after is not None and after.group(1) == "text" and not source[fence.end() : after.start()].strip():
            block.output = after.group(2)
        found.append(block)
    return found


def _checked_outputs(page: Path) -> list[str]:
    return [b.output for b in blocks(page) if b.output is not None and b.marker != "skip"]


def test_the_pages_have_commands() -> None:
    counted = {page.relative_to(REPO).as_posix(): len(blocks(page)) for page in PAGES}
    assert counted["README.md"] >= 5 and sum(counted.values()) >= 40, counted


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_skip_says_why(page: Path) -> None:
    unexplained = [b.where() for b in blocks(page) if b.marker == "skip" and len(b.reason) < 10]
    assert not unexplained, f"a skipped block must say why: {unexplained}"


# -- commands and options exist (cheap, in the default run) ------------------------------------------------------


def _is_group(command: object) -> bool:
    return hasattr(command, "get_command") and hasattr(command, "list_commands")


def _resolve(words: list[str]) -> tuple[Any, list[str]]:
    command: Any = typer.main.get_command(app)
    rest = list(words)
    while _is_group(command) and rest and not rest[0].startswith("-"):
        found = command.get_command(click.Context(command), rest[0])
        if found is None:
            break
        command, rest = found, rest[1:]
    return command, rest


def _sparsedebug_calls(command: str) -> list[list[str]]:
    """The arguments of every `sparsedebug` call in a shell command line (pipes, `&&`, redirections split off)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    calls, words = [], []
    for token in [*lexer, ";"]:
        if token and set(token) <= set("&|;<>()"):
            if words and words[0] == "sparsedebug":
                calls.append(words[1:])
            words = [] if token != ">" else ["(redirect)"]
        elif not words and "=" in token and not token.startswith("-"):
            continue  # an environment assignment before the command
        else:
            words.append(token)
    return calls


def _workflow_runs(page: Path) -> list[str]:
    runs = []
    for fence in FENCE.finditer(page.read_text()):
        if fence.group(1) == "yaml" and "jobs:" in fence.group(2):
            for job in yaml.safe_load(fence.group(2))["jobs"].values():
                runs += [" ".join(step["run"].split()) for step in job["steps"] if "run" in step]
    return runs


def _all_calls() -> list[tuple[str, list[str]]]:
    calls = []
    for page in PAGES:
        name = page.relative_to(REPO).as_posix()
        lines = [c for b in blocks(page) if b.lang in SHELL for c in b.commands] + _workflow_runs(page)
        calls += [(f"{name}: {' '.join(words)}", words) for line in lines for words in _sparsedebug_calls(line)]
    return calls


@pytest.mark.parametrize(("where", "words"), _all_calls(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_command_and_option_shown_exists(where: str, words: list[str]) -> None:
    command, rest = _resolve(words)
    assert not _is_group(command) or rest[:1] == ["--help"], f"{where}: no such command"
    options = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)} | {"--help"}
    for word in rest:
        if word.startswith("--"):
            assert word.split("=")[0] in options, f"{where}: {word} is not an option of {command.name}"


def test_every_repository_path_the_pages_name_exists() -> None:
    pattern = r"(?<![\w/.-])((?:sparsedebug|playbooks|fixtures|benchmarks|tests|docs)/[\w./-]*\w)"
    missing = sorted({f"{page.relative_to(REPO)}: {path}" for page in PAGES for path in re.findall(pattern, page.read_text())
                      if "*" not in path and not (REPO / path).exists() and not (page.parent / path).exists()})
    assert not missing, missing


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_paragraph_is_printed_twice(page: Path) -> None:
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", page.read_text()) if len(p.strip()) > 80]
    repeated = sorted({p[:80] for p in paragraphs if paragraphs.count(p) > 1})
    assert not repeated, repeated


def test_fallbacks_check_says_the_same_in_the_docs_and_help() -> None:
    help_text = " ".join(CliRunner().invoke(app, ["fallbacks", "--help"], env={"COLUMNS": "200"}).stdout.split())
    sentence = "unintended path change or a declared-sparse layer that ran dense"
    assert sentence in help_text and sentence in " ".join((DOCS / "inputs" / "traces.md").read_text().split())


# -- the README's shape ------------------------------------------------------------------------------------------


def test_the_readme_is_short_and_opens_with_the_two_commands() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 210
    first = [b.commands for b in blocks(REPO / "README.md")[:2]]
    assert first == [["pip install -e . && sparsedebug playbook run"], ["pip install -e '.[test]' && python -m pytest -q"]]


# -- generated reference -------------------------------------------------------------------------------------------


def test_the_cli_reference_lists_every_command_and_option_help_shows() -> None:
    hooks = _hooks()
    reference = hooks.cli_reference()
    for path, command in hooks.commands():
        title = " ".join(["sparsedebug", *path])
        assert f"## `{title}`" in reference, title
        shown = hooks.help_text(path)
        for param in command.params:
            for opt in (*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])):
                if opt.startswith("-") and opt in shown:
                    assert f"`{opt}" in reference or f" / {opt}" in reference, f"{title}: {opt}"
        assert shown in reference, f"{title}: --help text not in the reference"
    assert "<!-- generated: cli-reference -->" in (DOCS / "reference" / "cli.md").read_text()


def test_every_generated_part_a_page_asks_for_exists() -> None:
    hooks = _hooks()
    asked = {m.group(1) for page in PAGES for m in hooks.MARKER.finditer(page.read_text())}
    assert asked and asked <= set(hooks.GENERATED), asked - set(hooks.GENERATED)
    for name in sorted(asked):
        assert hooks.GENERATED[name]().strip(), name
    schemas = hooks.record_schemas()
    assert "## workload" in schemas and "## run" in schemas and "| `schema_version` |" in schemas


# -- no hand-quoted timing ---------------------------------------------------------------------------------------

TIMING = re.compile(
    r"(?<![\w.-])\d[\d,]*(?:\.\d+)?\s?(?:ms|µs|us|ns|s|sec|seconds?|min|minutes?|h|hours?)\b"
    r"|(?<![\w.])\d+(?:\.\d+)?x(?!\w)"
)
NOT_MEASUREMENTS = {
    "1.25x the baseline": "the p99 check's policy ratio (playbooks/gate-default.yaml)",
    "last 10 ms": "the sample length the harness aims for (records/defaults.py MIN_SAMPLE_MS)",
    "within 250 ms": "the longest sample the harness allows (records/defaults.py SAMPLE_CALLS_WITHIN_MS)",
    "0.5 ms": "the off-CPU bound of a call (core/noise.py), a threshold",
    "250 ms samples": "the shared H200 log's sampling period, a property of the fixture",
    "every 250 ms": "the shared H200 log's sampling period, a property of the fixture",
    "1 s average": "nvidia-smi's power.draw averaging window (NVIDIA's documentation)",
    "at least 0.25 s": "the contention window of the noise-aware harness (core/noise.py), a constant",
}
"""Phrases with a time unit that are constants of the tool, its policy or a capture command, not timings."""


def _lint_text(page: Path) -> str:
    text = page.read_text()
    for output in _checked_outputs(page):
        text = text.replace(output, "")  # checked against a real run every time: they cannot drift by hand
    for phrase in NOT_MEASUREMENTS:
        text = text.replace(phrase, " ")
    return text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_machine_dependent_timing_is_quoted_by_hand(page: Path) -> None:
    found = [f"line {_lint_text(page).count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}" for m in TIMING.finditer(_lint_text(page))]
    assert not found, (f"{page.relative_to(REPO)} quotes timings by hand {found}: a measured figure belongs in "
                       "docs/benchmarks/results.md, written by its benchmark (benchmarks/results.py)")


def test_every_allowed_phrase_is_still_used() -> None:
    text = "".join(page.read_text() for page in PAGES)
    unused = [phrase for phrase in NOT_MEASUREMENTS if phrase not in text]
    assert not unused, f"drop them from NOT_MEASUREMENTS: {unused}"


def test_the_timing_lint_catches_timings() -> None:
    for text in ("took 33 s", "p50 38 ms", "1.14x the time", "2x faster", "457 s on this machine", "12.5 us"):
        assert TIMING.search(text), text
    for text in ("4096x4096", "11008x4096x2048", "tokens 2048", "--rounds 7", "x2", "layers.0.mlp"):
        assert not TIMING.search(text), text


# -- every block runs --------------------------------------------------------------------------------------------


def _pattern(line: str) -> re.Pattern[str]:
    pieces = [r"\s+".join(re.escape(word) for word in piece.split()) for piece in line.strip().split("...")]
    return re.compile(".*?".join(pieces), flags=re.IGNORECASE)


def check_output(shown: str, output: str) -> list[str]:
    """The lines shown that the output lacks, in order: `...` lines skip, `...` inside a line is any text; spaces and
    letter case may differ (an output's wording of a lasting fact may change case: `decision:` / `Decision:`)."""
    position, missing = 0, []
    for line in shown.splitlines():
        if not line.strip() or line.strip() == "...":
            continue
        match = _pattern(line).search(output, position)
        if match is None:
            missing.append(line.strip())
        else:
            position = match.end()
    return missing


def test_check_output_can_fail() -> None:
    output = "decision: rollback\n  p50 33.1 ms\nexit 1\n"
    assert check_output("decision: rollback\n...\nexit 1", output) == []
    assert check_output("p50 ... ms", output) == []
    assert check_output("exit 1\ndecision: rollback", output) == ["decision: rollback"]
    assert check_output("decision: ship", output) == ["decision: ship"]
    assert check_output("Decision: rollback", output) == []


def _scratch(tmp: Path) -> dict[str, str]:
    for name in ("fixtures", "playbooks", "benchmarks"):
        (tmp / name).symlink_to(REPO / name)
    shim = tmp / ".bin"
    shim.mkdir()
    (shim / "sparsedebug").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m sparsedebug "$@"\n')
    (shim / "sparsedebug").chmod(0o755)
    (shim / "python").symlink_to(sys.executable)
    return {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPO), "COLUMNS": "100",
            "NO_COLOR": "1", "TERM": "dumb", "PYTHONUNBUFFERED": "1", "SPARSEDEBUG_BENCH_RESULTS": "-", "GITHUB_STEP_SUMMARY": str(tmp / "summary.md")}


def _page_param(page: Path) -> Any:
    slow = any(b.marker == "slow" for b in blocks(page))
    return pytest.param(page, id=page.relative_to(REPO).as_posix(), marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("page", [_page_param(p) for p in PAGES if any(b.marker != "skip" for b in blocks(p))])
def test_every_shell_block_runs_as_shown(page: Path, tmp_path: Path) -> None:
    env = _scratch(tmp_path)
    for block in blocks(page):
        if block.marker == "skip":
            continue
        outputs = []
        for command in block.commands:
            expected = int(m.group(1)) if (m := EXIT.search(command)) else 0
            proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=1200, check=False)
            outputs.append(proc.stdout)  # stderr in its place: progress lines and results in the order printed
            assert "Traceback" not in proc.stdout, f"{block.where()}: {command}\n{proc.stdout}"
            assert proc.returncode == expected, (f"{block.where()}: {command} exited {proc.returncode}, "
                                                 f"the page says {expected}\n{outputs[-1][-3000:]}")
        if block.output is not None:
            missing = check_output(block.output, "\n".join(outputs))
            assert not missing, f"{block.where()}: lines shown but not printed: {missing}\n--- printed:\n" + "\n".join(outputs)[-6000:]


def test_every_workflow_gate_step_is_a_command_the_page_runs() -> None:
    """The GitHub Actions snippets run `gate` exactly as a shell block of the same page does (with the job summary
    for `summary.md`), so running the page's blocks runs the workflow's gate, exit code and output checked."""
    shown = 0
    for page in PAGES:
        commands = {" ".join(c.split(" #")[0].split()) for b in blocks(page) if b.marker != "skip" for c in b.commands}
        for run in _workflow_runs(page):
            if run.startswith("sparsedebug gate"):
                shown += 1
                assert run.replace('"$GITHUB_STEP_SUMMARY"', "summary.md") in commands, f"{page.name}: {run}"
    assert shown >= 2, "the README and the CI page show the workflow"
