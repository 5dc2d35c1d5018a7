"""One quantity, one number: what a memo and a report quote must agree with the bundle's records and with itself.

:func:`claim_problems` reads a bundle's ``memo.md`` and ``report.md`` beside its records and lists every quoted
figure that is not what the records hold or that is quoted with two values without a label saying which
measurement each is: the p50 of a run, a speedup over the baseline, a share of kernel time, probe counts; plus
the wording that has misled reviewers (an absolute local path as the proving artifact, advice naming a flag the
command does not take, a torch error without its source, "no GPU" for a GPU profile, a p99 of few samples called
the sample maximum, "as fast as" for a model several times faster).

``tests/conftest.py`` runs it on every bundle a test writes with ``playbook run`` in-process (the walk's last step
is wrapped), so a new rendering that breaks a claim fails the test that wrote the bundle. The tests below run it on
bundles built here and check that it catches each kind of problem. Extend ``CHECKS`` with more claims (one
function per claim, text and bundle in, problems out).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path

import click
import pytest
import typer

from sparsedebug.core.stats import median
from sparsedebug.records.run import RunRecord
from sparsedebug.render.markdown.deployment import render_report
from sparsedebug.render.markdown.memo import render_memo_detail
from sparsedebug.signoff.metrics import fallback_summary, p50_speedup
from sparsedebug.sources.bundle import LoadedBundle, load_bundle
from sparsedebug.sources.playbook import load_playbook
from sparsedebug.sources.workload.lowering import PROFILES
from tests.support.bundles import reviewed

Check = Callable[[LoadedBundle, str, str], list[str]]
"""A claim check: (bundle, memo text, report text) -> problems, one line each."""

NUMBER = r"([0-9]+(?:\.[0-9]+)?)"


def _runs(bundle: LoadedBundle) -> dict[str, RunRecord]:
    runs = {"baseline": bundle.baseline, "candidate": bundle.candidate}
    if bundle.fixed is not None:
        runs["fixed"] = bundle.fixed
    return runs


def _same(quoted: str, value: float) -> bool:
    """``quoted`` is ``value`` as rendered (to the decimals shown)."""
    decimals = len(quoted.split(".")[1]) if "." in quoted else 0
    return abs(float(quoted) - value) <= 0.5 * 10 ** -decimals + 1e-12


def _p50(run: RunRecord) -> float | None:
    samples = run.outcome.latency_samples_ms
    return median(samples) if samples else None


def _clauses(text: str) -> list[str]:
    return [c for line in text.splitlines() for c in re.split(r";\s|\.\s(?=[A-Z(])", line) if c.strip()]


# --------------------------------------------------------------------------- the checks


RUN_P50 = re.compile(rf"\b(fixed candidate|baseline|candidate|fixed)\b(?: run)?(?: `[^`]+`)?:? (?:latency )?p50(?:/p95/p99)? {NUMBER} ?(?:/|ms)")


def run_p50s(bundle: LoadedBundle, memo: str, report: str) -> list[str]:
    """Every "<role> p50 X" is that run's p50."""
    runs = _runs(bundle)
    problems = []
    for where, text in (("memo", memo), ("report", report)):
        for match in RUN_P50.finditer(text):
            role = "fixed" if match.group(1).startswith("fixed") else match.group(1)
            if role not in runs:
                continue
            value = _p50(runs[role])
            if value is not None and not _same(match.group(2), value):
                problems.append(f"{where}: '{match.group(0)}' but the {role} run's p50 is {value:.3f} ms")
    return problems


MOVE_P50 = re.compile(rf"latency p50: {NUMBER} ms -> {NUMBER} ms")
MOVE_SPEEDUP = re.compile(rf"speedup over baseline \(p50\): {NUMBER}x -> {NUMBER}x")
SPEEDUP = re.compile(rf"Candidate speedup over the baseline \(baseline p50 / candidate p50[^)]*\): \*\*{NUMBER}x")


def movement_and_speedups(bundle: LoadedBundle, memo: str, report: str) -> list[str]:
    """Measured movement runs candidate -> fixed; the candidate's speedup over the baseline is baseline p50 / its p50."""
    problems = []
    cand_p50, base = _p50(bundle.candidate), bundle.baseline
    fixed = bundle.fixed
    for match in MOVE_P50.finditer(memo):
        if cand_p50 is not None and not _same(match.group(1), cand_p50):
            problems.append(f"memo: movement '{match.group(0)}' does not start at the candidate's p50 {cand_p50:.3f}")
        fixed_p50 = _p50(fixed) if fixed is not None else None
        if fixed_p50 is not None and not _same(match.group(2), fixed_p50):
            problems.append(f"memo: movement '{match.group(0)}' does not end at the fixed run's p50 {fixed_p50:.3f}")
    for match in MOVE_SPEEDUP.finditer(memo):
        for quoted, run, role in ((match.group(1), bundle.candidate, "candidate"), (match.group(2), fixed, "fixed")):
            speed = p50_speedup(base, run) if run is not None else None
            if speed is not None and not _same(quoted, speed):
                problems.append(f"memo: '{match.group(0)}': the {role} run's speedup over the baseline is {speed:.3f}x")
    for match in SPEEDUP.finditer(memo):
        speed = p50_speedup(base, bundle.candidate)
        if speed is not None and not _same(match.group(1), speed):
            problems.append(f"memo: '{match.group(0)}' but baseline p50 / candidate p50 is {speed:.3f}x")
    return problems


DENSE_SIDE_BY_SIDE = re.compile(rf"(?:p50|projected) {NUMBER} ms vs (?:the )?(?:candidate|fixed|run )")
AS_FAST = re.compile(rf"the dense model is (about as fast as|{NUMBER}x faster than|at least as fast as|already as fast as)", re.I)


def equal_latency_labels(bundle: LoadedBundle, memo: str, report: str) -> list[str]:
    """The dense model's latency from the equal-latency search is labelled as that search's, never as a run's p50;
    "as fast as" only for latencies within 5%."""
    problems = []
    for where, text in (("memo", memo), ("report", report)):
        for clause in _clauses(text):
            if DENSE_SIDE_BY_SIDE.search(clause) and "dense" in clause.lower() and "side by side" not in clause:
                problems.append(f"{where}: an equal-latency timing without its label: '{clause.strip()[:160]}'")
            found = AS_FAST.search(clause)
            if found is not None and found.group(1) == "already as fast as":
                problems.append(f"{where}: 'already as fast as' says nothing of how much faster: '{clause.strip()[:160]}'")
            if found is not None and found.group(1) == "about as fast as":
                pair = re.search(rf"dense (?:p50|projected) {NUMBER} ms vs [^0-9]*{NUMBER} ms", clause)
                if pair is not None and abs(float(pair.group(1)) / float(pair.group(2)) - 1) > 0.05 + 1e-3:
                    problems.append(f"{where}: 'about as fast' for {pair.group(1)} vs {pair.group(2)} ms")
    return problems


KERNEL_SHARE = re.compile(r"([0-9]+(?:\.[0-9]+)?)% of kernel time")
SHARE_LABELS = ("on dense paths", "in dense fallbacks", "in fallbacks", "in the fallbacks", "in these fallbacks", "in fallback")


def kernel_time_shares(bundle: LoadedBundle, memo: str, report: str) -> list[str]:
    """A share of kernel time says which share it is (on dense paths, in fallbacks) and is one of the runs' values."""
    summaries = [fallback_summary(run) for run in _runs(bundle).values()]
    dense = [s.dense_time_share for s in summaries if s.dense_time_share is not None]
    fallback = [s.fallback_time_share for s in summaries if s.fallback_time_share is not None]
    problems = []
    for where, text in (("memo", memo), ("report", report)):
        for match in KERNEL_SHARE.finditer(text):
            after = text[match.end(): match.end() + 40]
            before = text[max(0, match.start() - 40): match.start()]
            label = next((lab for lab in SHARE_LABELS if after.lstrip(" (").startswith(lab)), None)
            if label is None and "fallback" in before.rsplit("\n", 1)[-1]:
                label = "in fallbacks"
            if label is None:
                if "dense" in before.rsplit("\n", 1)[-1].rsplit(";", 1)[-1] or "dense" in after[:12]:
                    label = "on dense paths"
                else:
                    continue  # another share (copy kernels, a class): not one of these two quantities
            values = dense if label == "on dense paths" else fallback
            if values and not any(_same(match.group(1), 100 * v) for v in values):
                problems.append(f"{where}: '{match.group(0)} {label}' is no run's share ({', '.join(f'{100 * v:.1f}%' for v in values)})")
    return problems


STATIC_COUNTS = re.compile(r"([0-9]+) static (?:graph\+lowering run\(s\)|probes?)")


def probe_counts(bundle: LoadedBundle, memo: str, report: str) -> list[str]:
    """The reduction's static runs are counted once: every quote is the record's number."""
    if bundle.reduce is None:
        return []
    quoted = {int(m.group(1)) for m in STATIC_COUNTS.finditer(memo)}
    if quoted - {bundle.reduce.static_probes}:
        return [f"memo: static probe counts {sorted(quoted)}; the reduction record says {bundle.reduce.static_probes}"]
    return []


def target_wording(bundle: LoadedBundle, memo: str, report: str) -> list[str]:
    """"models no GPU" only for a backend profile that models none."""
    problems = []
    for role, run in _runs(bundle).items():
        profile = PROFILES.get(run.lower.backend)
        if profile is not None and profile.target is not None and "models no GPU" in report:
            problems.append(f"report: says a profile models no GPU, but the {role} run's `{run.lower.backend}` models the {profile.target}")
    return problems


ABSOLUTE = re.compile(r"(?<![\w.`])/(?:home|root|tmp|work|Users|var|opt|mnt|srv)/\S+")


def artifact_paths(bundle: LoadedBundle, memo: str, report: str) -> list[str]:
    """The proving artifact is named inside the bundle (or ``embedded:``), never by an absolute local path."""
    return [f"memo: absolute local path in '{line.strip()[:160]}'" for line in memo.splitlines()
            if "Artifact that proves it" in line and ABSOLUTE.search(line)]


def torch_messages(bundle: LoadedBundle, memo: str, report: str) -> list[str]:
    """A quoted torch error says where it comes from (no torch ran)."""
    problems = []
    for where, text in (("memo", memo), ("report", report)):
        for line in text.splitlines():
            if re.search(r"raises (RuntimeError|NotImplementedError)\(", line) and "support matrix" not in line:
                problems.append(f"{where}: a torch error without its source: '{line.strip()[:160]}'")
    return problems


def p99_wording(bundle: LoadedBundle, memo: str, report: str) -> list[str]:
    """A p99 of few samples is not "the sample maximum" (it is interpolated between the two largest)."""
    return [f"{where}: calls a p99 the sample maximum" for where, text in (("memo", memo), ("report", report)) if "sample maximum" in text]


def _command_options() -> dict[str, set[str]]:
    from sparsedebug.cli.app import app

    root = typer.main.get_command(app)
    out: dict[str, set[str]] = {}

    def walk(command: object, path: str) -> None:
        if hasattr(command, "list_commands"):
            ctx = click.Context(command)  # type: ignore[arg-type]
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), f"{path} {name}".strip())
            return
        out[path] = {opt for param in getattr(command, "params", []) for opt in (*param.opts, *param.secondary_opts)}

    walk(root, "")
    return out


def advice_flags(bundle: LoadedBundle, memo: str, report: str) -> list[str]:
    """Advice names commands and flags that exist: a quoted `sparsedebug CMD --flag` has it, a bare --flag is playbook run's."""
    options = _command_options()
    problems = []
    for line in memo.splitlines():
        if "capture:" not in line:
            continue
        advice = line.split("capture:", 1)[1]
        quoted = re.findall(r"`sparsedebug ([^`]+)`", advice)
        for command in quoted:
            words = shlex.split(command)
            name = next((" ".join(words[:n]) for n in (2, 1) if " ".join(words[:n]) in options), None)
            if name is None:
                problems.append(f"memo: advice names no command: `sparsedebug {command}`")
                continue
            for word in words:
                if word.startswith("--") and word.split("=")[0] not in options[name]:
                    problems.append(f"memo: `sparsedebug {command}`: {word} is not an option of {name}")
        bare = re.sub(r"`[^`]*`", "", advice)
        for flag in re.findall(r"(?<![\w-])--[a-z][a-z-]*", bare):
            if flag not in options["playbook run"]:
                problems.append(f"memo: advice to pass {flag}, which `playbook run` does not take: '{line.strip()[:160]}'")
    return problems


ENERGY_P50 = re.compile(rf"{NUMBER} (J/forward|J/token|tokens/J) p50")
ENERGY_FIGURE = re.compile(rf"{NUMBER} (J/forward|J/token|tokens/J)(?! p50)")
_ENERGY_FIELD = {"J/forward": "joules_per_forward", "J/token": "joules_per_token", "tokens/J": "tokens_per_joule"}


def energy_figures(bundle: LoadedBundle, memo: str, report: str) -> list[str]:
    """A measured energy figure ("X J/token p50") is the p50 of the nearest role before it, whose energy was measured:
    its status ``measured`` and every window it ranges over a measured ``WindowEnergy``."""
    problems = []
    energy = bundle.energy
    for where, text in (("memo", memo), ("report", report)):
        for line in text.splitlines():
            for match in ENERGY_P50.finditer(line):
                roles = re.findall(r"\b(baseline|candidate|fixed)\b", line[: match.start()])
                side = energy.side(roles[-1]) if energy is not None and roles else None
                if side is None:
                    problems.append(f"{where}: an energy figure with no side's energy record: '{line.strip()[:160]}'")
                    continue
                summary = getattr(side, _ENERGY_FIELD[match.group(2)])
                if side.status != "measured" or summary is None or not side.windows or any(w.status != "measured" for w in side.windows):
                    problems.append(f"{where}: {roles[-1]} {match.group(0)} without a measured window energy")
                elif not _same(match.group(1), summary.p50) and not re.fullmatch(r"[0-9.]+e[-+]?[0-9]+", match.group(1)):
                    problems.append(f"{where}: {roles[-1]} {match.group(0)} is not its record's p50 {summary.p50:.4g}")
    return problems


def energy_estimates_labelled(bundle: LoadedBundle, memo: str, report: str) -> list[str]:
    """An energy figure that is not a measured p50 (a target estimate, a projection) is on a line that says estimate."""
    problems = []
    for where, text in (("memo", memo), ("report", report)):
        for line in text.splitlines():
            if line.lstrip().startswith("|"):
                continue  # table cells carry the label in their column header
            if ENERGY_FIGURE.search(line) and "estimate" not in line.lower():
                problems.append(f"{where}: an energy figure neither a measured p50 nor labelled estimate: '{line.strip()[:160]}'")
    return problems


def energy_missing_named(bundle: LoadedBundle, memo: str, report: str) -> list[str]:
    """The memo's perf-per-watt line says a side without measured energy is not measured (in the line, or in that side's
    sub-bullet), with the command line that captures a usable log when there is one; the report lists every command."""
    energy = bundle.energy
    if energy is None:
        return []
    lines = memo.splitlines()
    start = next((k for k, line in enumerate(lines) if "Perf-per-watt" in line), None)
    if start is None:
        return ["memo: no perf-per-watt line in the expected movement"]
    block = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith("    - "):
            break
        block.append(line)
    problems = []
    for side in energy.sides:
        if side.status == "measured" or side.role not in ("baseline", "candidate"):
            continue
        said = "not measured" in block[0] or any(line.startswith(f"    - {side.role} `{side.run}`: not measured") for line in block)
        if not said:
            problems.append(f"memo: the perf-per-watt line does not say the {side.role}'s energy is not measured ({side.status})")
        if energy.capture and not any(energy.capture[0] in line for line in block):
            problems.append(f"memo: energy evidence missing without the capture command `{energy.capture[0]}`")
    problems += [f"report: capture command `{c}` not listed" for c in energy.capture if c not in report]
    return problems


CHECKS: list[Check] = [
    run_p50s, movement_and_speedups, equal_latency_labels, kernel_time_shares, probe_counts, target_wording,
    artifact_paths, torch_messages, p99_wording, advice_flags, energy_figures, energy_estimates_labelled, energy_missing_named,
]


def claim_problems(bundle: LoadedBundle, memo: str, report: str) -> list[str]:
    """Every problem every check finds in ``memo`` and ``report`` of ``bundle``."""
    return [problem for check in CHECKS for problem in check(bundle, memo, report)]


def bundle_dir_problems(root: Path) -> list[str]:
    """On a bundle directory as written: :func:`claim_problems` on the memo's detail (in report.md) and the report, and
    the model-based claims check (``render.memo.claims``) of memo.md against the memo model the walk stored beside it,
    and the limits a lead reads memo.md by (``render.memo.claims.lead_problems``: line and sentence lengths, no codes)."""
    from sparsedebug.records.memo import Memo
    from sparsedebug.render.memo.claims import check_claims, lead_problems

    bundle = load_bundle(root)
    report = (root / "report.md").read_text()
    detail = report[report.index("## Memo detail"):] if "## Memo detail" in report else report
    problems = claim_problems(bundle, detail, report)
    model = Memo.model_validate_json((root / "memo.json").read_text())
    memo = (root / "memo.md").read_text()
    problems += [f"memo.md: {p}" for p in check_claims(memo, model) + lead_problems(memo)]
    return [f"{root}: {p}" for p in problems]


# --------------------------------------------------------------------------- the tests


def _rendered(bundle: LoadedBundle) -> tuple[str, str]:
    return render_memo_detail(bundle, load_playbook()), render_report(bundle)


def _built_bundles() -> dict[str, LoadedBundle]:
    from tests.render.html.common import small_bundle
    from tests.render.html.test_browser import wide_bundle

    return {"small": small_bundle(), "wide": wide_bundle()}


@pytest.mark.parametrize("name", ["small", "wide"])
def test_bundles_built_here_quote_each_quantity_once(name: str) -> None:
    bundle = _built_bundles()[name]
    memo, report = _rendered(bundle)
    assert claim_problems(bundle, memo, report) == []


def test_the_checks_catch_what_reviewers_tripped_over() -> None:
    bundle = _built_bundles()["wide"]
    memo, report = _rendered(bundle)
    cand = _p50(bundle.candidate)
    assert cand is not None
    bad_memo = memo + "\n".join([
        "",
        f"- candidate p50 {cand * 1.1:.3f} ms",
        "- The dense model is already as fast as the candidate (p50 70.756 ms vs candidate 222.861 ms; this machine).",
        "- 99.9% of kernel time on dense paths",
        "  - Artifact that proves it: /work/somewhere/minilm.yaml: latency.",
        "  - compute: no roofline; capture: run `sparsedebug freeze --calibrate -o fp.yaml` and pass --fingerprint fp.yaml.",
        "- fallback: to_sparse_semi_structured raises RuntimeError('no')",
        "- p99 is inconclusive (the sample maximum, not a tail estimate)",
    ])
    problems = " | ".join(claim_problems(bundle, bad_memo, report + "\n- no target clock in this run (its backend profile models no GPU)"))
    for needle in ("run's p50", "already as fast", "without its label", "no run's share", "absolute local path", "--fingerprint",
                   "without its source", "sample maximum"):
        assert needle in problems, (needle, problems)


def test_a_gpu_profile_is_never_said_to_model_no_gpu() -> None:
    bundle = _built_bundles()["small"]
    run = bundle.candidate
    on_gpu = run.model_copy(update={"lower": run.lower.model_copy(update={"backend": "h200-cusparselt"})})
    gpu_bundle = reviewed(bundle.model_copy(update={"candidate": on_gpu}))
    report = render_report(gpu_bundle)
    assert "models no GPU" not in report.split("(fixed")[0] and "no target projection in this run" in report
    assert "no target projection in this run" not in report.split("(fixed")[-1]  # the fixed run stays on cpu-numpy
