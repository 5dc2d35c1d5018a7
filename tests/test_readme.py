"""The README's examples run as written: every command and option exists, every repository path is there,
and the CI gate workflow runs end to end (exit 1: the embedded replays fail the quality guardrail, as the README says)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
import typer
import yaml

from sparsedebug.cli.app import app

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def _bash_commands() -> list[str]:
    commands = []
    for block in _blocks("bash"):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.split(" #")[0].strip()
            for part in line.split("&&"):
                part = part.strip()
                if part.startswith("sparsedebug "):
                    commands.append(part)
    return commands


def _workflow_runs() -> list[str]:
    (workflow,) = [b for b in _blocks("yaml") if "sparsity-gate" in b]
    steps = yaml.safe_load(workflow)["jobs"]["gate"]["steps"]
    return [" ".join(step["run"].split()) for step in steps if "run" in step and step["run"].startswith("sparsedebug")]


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


def test_the_readme_has_examples() -> None:
    assert len(_bash_commands()) >= 15
    assert len(_workflow_runs()) == 1  # the interleaved form: gate BASE.yaml CAND.yaml replays both in one session


@pytest.mark.parametrize("line", [*_bash_commands(), *_workflow_runs()])
def test_every_example_names_real_commands_options_and_files(line: str) -> None:
    words = [w for w in shlex.split(line.replace("[", " ").replace("]", " ").replace("|", " "))][1:]
    command, rest = _resolve(words)
    assert not _is_group(command), f"{line}: no such command"
    options = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
    for word in rest:
        if word.startswith("--"):
            assert word.split("=")[0] in options, f"{line}: {word} is not an option of {command.name}"
        if word.startswith(("fixtures/", "playbooks/")):
            assert (REPO / word).exists(), f"{line}: {word} does not exist"


def test_fallbacks_check_says_the_same_in_readme_and_help() -> None:
    help_text = " ".join(typer.testing.CliRunner().invoke(app, ["fallbacks", "--help"], env={"COLUMNS": "200"}).stdout.split())
    sentence = "unintended path change or a declared-sparse layer that ran dense"
    assert sentence in help_text and sentence in " ".join(README.split())


@pytest.mark.slow
def test_the_ci_workflow_runs_as_written(tmp_path: Path) -> None:
    for name in ("fixtures", "playbooks"):
        (tmp_path / name).symlink_to(REPO / name)
    summary = tmp_path / "summary.md"
    env = {**os.environ, "PYTHONPATH": str(REPO), "GITHUB_STEP_SUMMARY": str(summary), "COLUMNS": "120"}
    codes = []
    for line in _workflow_runs():
        args = shlex.split(os.path.expandvars(line.replace('"$GITHUB_STEP_SUMMARY"', str(summary))))
        proc = subprocess.run([sys.executable, "-m", "sparsedebug", *args[1:]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600, check=False)
        assert "Traceback" not in proc.stderr and "error:" not in proc.stderr, proc.stderr
        codes.append(proc.returncode)
    assert codes == [1]  # the gate fails the quality guardrail on pruned random weights, as the README says
    assert (tmp_path / "gate.xml").is_file() and summary.read_text().startswith("## sparsedebug gate: FAILED")
    assert "quality_delta" in summary.read_text()


def test_no_paragraph_is_printed_twice() -> None:
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", README) if len(p.strip()) > 80]
    repeated = sorted({p[:80] for p in paragraphs if paragraphs.count(p) > 1})
    assert not repeated, repeated


def test_every_repository_path_the_readme_names_exists() -> None:
    named = set(re.findall(r"(?<![\w/.-])((?:sparsedebug|playbooks|fixtures|benchmarks|tests)/[\w./-]*\w)", README))
    missing = sorted(path for path in named if "*" not in path and not (REPO / path).exists())
    assert not missing, missing
