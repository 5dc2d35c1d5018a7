"""`memo --verify` over bundles as written, and seeded mutations of their memo.md: every mutation of a printed number,
decision or direction word, name or run fails the check; the honest text and the honest JSON pass.

Mutations are generated from the text of each bundle (not hand-picked): each number's last digit changed, each
decision and direction word flipped, neighbouring code spans (layers, mechanisms, owners, kernels) swapped, two
different figures of one unit swapped, a line's run names exchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparsedebug.core.io import save_record
from sparsedebug.playbook.verify import verify_bundle
from sparsedebug.records.memo import Memo
from sparsedebug.render.memo.formats import disagreements, render
from tests.conftest import FIXTURES, invoke
from tests.support.synth import dense_run, sparse_run

H200 = FIXTURES / "h200"

DIGIT = re.compile(r"\d(?!\d)")
"""The last digit of each number as printed (``0.506`` -> its ``6``; ``layers.12`` -> its ``2``)."""
WORD_FLIPS = {"ship": "rollback", "rollback": "ship", "escalate": "ship", "faster": "slower", "slower": "faster",
              "pass": "fail", "fail": "pass", "above": "below", "below": "above", "more": "fewer", "fewer": "more"}
RUNS = ("baseline", "candidate")
CODE = re.compile(r"`[^`]+`")
MS = re.compile(r"\d+\.\d+ ms")


def mutations(text: str) -> Iterator[tuple[str, str]]:
    """(what was changed, the mutated text) for every seeded mutation of ``text``; each changes what it states."""
    for m in DIGIT.finditer(text):
        digit = int(m.group())
        yield f"digit at {m.start()}", text[: m.start()] + str((digit + 1) % 10) + text[m.end():]
    for word, other in WORD_FLIPS.items():
        for m in re.finditer(rf"\b{word}\b", text):
            yield f"{word} -> {other} at {m.start()}", text[: m.start()] + other + text[m.end():]
    spans = list(CODE.finditer(text))
    for a, b in zip(spans, spans[1:], strict=False):
        if a.group() != b.group():
            yield f"swap {a.group()} and {b.group()}", (text[: a.start()] + b.group() + text[a.end(): b.start()] + a.group()
                                                        + text[b.end():])
    figures = list(MS.finditer(text))
    for a, b in zip(figures, figures[1:], strict=False):
        if a.group() != b.group():
            yield f"swap {a.group()} and {b.group()}", (text[: a.start()] + b.group() + text[a.end(): b.start()] + a.group()
                                                        + text[b.end():])
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if all(re.search(rf"\b{run}\b", line) for run in RUNS) and re.search(r"\d", line):
            swapped = re.sub(r"\b(baseline|candidate)\b", lambda m: RUNS[1 - RUNS.index(m.group())], line)
            yield f"runs exchanged on line {i + 1}", "".join([*lines[:i], swapped, *lines[i + 1:]])


def _walk(out: Path, *args: str) -> Path:
    result = invoke(["playbook", "run", *args, "--no-reduce", "-o", str(out)])
    assert result.exit_code == 0, result.stdout + result.stderr
    return out


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Walked bundles of different kinds: the shared eager H200 trace pair with its CUDA-graph fix, and run records."""
    root = tmp_path_factory.mktemp("verify")
    records = {}
    for name, run in (("base", dense_run(5.0)), ("cand", sparse_run(6.5, fallback=True)), ("fixed", sparse_run(5.4, fallback=True))):
        records[name] = root / f"{name}.json"
        save_record(run, records[name])
    return {
        "h200-eager-fixed-cudagraph": _walk(
            root / "h200", "--baseline", str(H200 / "trace_dense_T2048.json.gz"),
            "--candidate", str(H200 / "trace_sparse_mlp_T2048.json.gz"), "--fixed", str(H200 / "trace_sparse_mlp_T2048_cudagraph.json.gz"),
        ),
        "run-records": _walk(root / "records", "--baseline", str(records["base"]), "--candidate", str(records["cand"]),
                             "--fixed", str(records["fixed"])),
    }


@pytest.mark.parametrize("name", ["h200-eager-fixed-cudagraph", "run-records"])
def test_a_bundle_as_written_is_verified(bundles: dict[str, Path], name: str) -> None:
    checked = verify_bundle(bundles[name])
    assert checked.verified and [f.file for f in checked.files] == ["memo.md"], checked


@pytest.mark.parametrize("name", ["h200-eager-fixed-cudagraph", "run-records"])
def test_every_seeded_mutation_of_memo_md_fails_the_check(bundles: dict[str, Path], name: str) -> None:
    root = bundles[name]
    memo = Memo.model_validate_json((root / "memo.json").read_text())
    text = (root / "memo.md").read_text()
    assert disagreements(memo, "markdown", text) == []
    seeded = dict(mutations(text))
    kinds = {what.split(" ")[0] for what in seeded}
    assert len(seeded) > 100 and {"digit", "swap", "runs"} <= kinds, sorted(kinds)
    passed = [what for what, mutated in seeded.items() if mutated != text and not disagreements(memo, "markdown", mutated)]
    assert passed == []


def test_a_changed_number_is_named_by_the_meaning_check_before_the_line(bundles: dict[str, Path]) -> None:
    """A speedup printed as another value is a number no figure carries: the claims check names it first."""
    root = bundles["h200-eager-fixed-cudagraph"]
    memo = Memo.model_validate_json((root / "memo.json").read_text())
    text = (root / "memo.md").read_text()
    speedup = re.search(r"(\d\.\d{3})x", text)
    assert speedup is not None
    wrong = f"{float(speedup.group(1)) + 0.25:.3f}"
    problems = disagreements(memo, "markdown", text.replace(speedup.group(0), wrong + "x", 1))
    assert problems[0].startswith(f"no figure behind {wrong}x") and problems[1].startswith("line ")


def test_the_honest_json_passes_and_an_edited_json_does_not(bundles: dict[str, Path]) -> None:
    memo = Memo.model_validate_json((bundles["run-records"] / "memo.json").read_text())
    honest = render(memo, "json")
    assert disagreements(memo, "json", honest) == []
    code = memo.decision.code
    other = "ship" if code != "ship" else "rollback"
    assert disagreements(memo, "json", honest.replace(f'"{code}"', f'"{other}"', 1))


def test_memo_verify_exits_0_then_1_on_an_edit_then_2_on_an_unreadable_bundle(bundles: dict[str, Path], tmp_path: Path) -> None:
    import json
    import shutil

    ok = invoke(["memo", str(bundles["run-records"]), "--verify", "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["verified"] is True
    edited = shutil.copytree(bundles["run-records"], tmp_path / "edited")
    memo_md = edited / "memo.md"
    memo_md.write_text(memo_md.read_text().replace("judged on the fixed run", "judged on the candidate run", 1))
    failed = invoke(["memo", str(edited), "--verify"])
    assert failed.exit_code == 1 and failed.stdout.startswith("not verified: memo.md disagrees with memo.json: line 3 ")
    (edited / "memo.json").write_text("{")
    unreadable = invoke(["memo", str(edited), "--verify"])
    assert unreadable.exit_code == 2 and "memo.json" in unreadable.stderr and "Traceback" not in unreadable.stderr
    mixed = invoke(["memo", str(bundles["run-records"]), "--verify", "-o", str(tmp_path / "m.md")])
    assert mixed.exit_code == 2 and "--verify" in mixed.stderr


def test_a_memo_that_fails_its_claims_check_is_never_published(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A renderer that prints a figure the document does not hold (planted here) stops the walk with exit 3, one line
    per problem, before the bundle is swapped into place: no bundle, no half-written folder."""
    from sparsedebug.render.memo.markdown import MarkdownMemo

    honest = MarkdownMemo.format
    monkeypatch.setattr(MarkdownMemo, "format", lambda self, memo: honest(self, memo) + "\n- candidate p50 987.654 ms\n")
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    save_record(dense_run(5.0), base)
    save_record(sparse_run(6.5, fallback=True), cand)
    out = tmp_path / "bundle"
    result = invoke(["playbook", "run", "--baseline", str(base), "--candidate", str(cand), "--no-reduce", "-o", str(out)])
    assert result.exit_code == 3, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors[0].startswith("error: internal error (a bug to report): memo.md states what its review document")
    assert errors[1:] == ["error: no figure behind 987.654ms: - candidate p50 987.654 ms"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.json", "cand.json"]
