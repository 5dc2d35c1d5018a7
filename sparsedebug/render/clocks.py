"""Which clock a rendered latency is on, in words: shared by the terminal, memo and report renderers.

A replay's samples are measured on this machine; an imported trace's on the GPU
that was traced; a run's ``target`` holds latencies projected onto the GPU of its
backend profile. Every latency a renderer prints carries one of these labels.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sparsedebug.records.figures import RunFigures
from sparsedebug.records.run import RunRecord
from sparsedebug.records.target import TargetClock
from sparsedebug.render.words.run_figures import THIS_MACHINE, sample_count
from sparsedebug.render.words.target import missing_forward_words

__all__ = [
    "THIS_MACHINE", "bundle_clock", "label_latencies", "measured_clock", "sample_count", "quotes_unlabelled_latency", "slower_layers",
    "target_clock_label", "target_forward", "target_label", "target_sentence",
]

CLOCK_WORDS = ("this machine", "target clock", "projected", "traced")
"""Words that name a clock in rendered text."""
_LATENCY = re.compile(r"\d\s?(ms|us)\b")



def measured_clock(run: RunFigures) -> str:
    """The clock of a run's own timing samples in words: this machine (a replay), or the device an import was traced
    (or profiled) on."""
    if run.clock == "measured":
        return THIS_MACHINE
    return f"{run.backend}, {'profiled' if run.clock == 'profiled' else 'traced'}"


def bundle_clock(runs: Sequence[RunFigures]) -> str:
    """The clock of several runs in words: one label when they share it, else each run's."""
    labels = list(dict.fromkeys(measured_clock(run) for run in runs))
    if len(labels) == 1:
        return labels[0]
    return "; ".join(f"{run.run}: {measured_clock(run)}" for run in runs)


def target_clock_label(backend: str, device: str, launch: str) -> str:
    """``target clock: h200-cusparselt (NVIDIA H200 SXM), eager, projected``: the one spelling of the target clock."""
    return f"target clock: {backend} ({device}), {launch.replace('_', ' ')}, projected"


def target_label(target: TargetClock) -> str:
    """:func:`target_clock_label` of a run's target clock."""
    return target_clock_label(target.backend, target.device, target.launch)


def target_forward(run: RunRecord) -> str | None:
    """The run's whole forward as it runs, on the target clock: ``forward 1.234 ms on the target clock: ... (basis ...)``.

    None when the run has no target clock (a ``cpu-numpy`` replay, an imported trace).
    """
    target = run.target
    if target is None:
        return None
    fwd = target.forward.candidate
    if fwd is None:
        return f"no whole-forward figure on the {target_label(target)} ({missing_forward_words(target.forward)})"
    return f"forward {fwd.total_ms:.3f} ms on the {target_label(target)} (basis {target.forward.basis})"


def target_sentence(run: RunRecord) -> str | None:
    """The whole forward on the target clock in one sentence, with the layers slower sparse than dense; None without."""
    target = run.target
    if target is None:
        return None
    fwd = target.forward
    if fwd.dense is None or fwd.candidate is None or fwd.speedup is None:
        return f"On the {target_label(target)}: no whole-forward projection ({missing_forward_words(fwd)})"
    text = (
        f"On the {target_label(target)}: dense forward {fwd.dense.total_ms:.3f} ms, candidate {fwd.candidate.total_ms:.3f} ms "
        f"(host {fwd.candidate.host_ms:.3f} ms, GPU {fwd.candidate.gpu_ms:.3f} ms): effective speedup {fwd.speedup:.3f}x "
        f"(basis {fwd.basis})"
    )
    slower = slower_layers(run)
    if slower:
        text += f"; {len(slower)} sparse layer(s) projected slower than dense there"
    return text


def break_even_sentence(run: RunRecord) -> str | None:
    """Whether 2:4 pays off on the target at the run's token count, per linear shape, and from how many tokens
    (``TargetClock.break_even``: claimed only where the 90% interval says so); None without a target or shapes."""
    target = run.target
    if target is None or not target.break_even:
        return None
    parts = []
    for even in target.break_even:
        here = next((r.verdict for r in even.ranges if r.first <= target.tokens <= r.last), None)
        shape = "x".join(str(d) for d in even.shape)
        if even.tokens_from is not None:
            onward = f"pays off from {even.tokens_from} tokens"
        elif even.loses_up_to is not None and even.loses_up_to >= even.searched_up_to:
            onward = f"loses at every count up to {even.searched_up_to}"
        else:
            onward = f"no break-even the interval supports up to {even.searched_up_to} tokens"
        parts.append(f"{shape} {even.dtype}: {here or 'no verdict'} at {target.tokens} tokens, {onward} ({even.basis})")
    return f"2:4 on the {target_label(target)} at this workload's {target.tokens} tokens, per linear shape: " + "; ".join(parts)


def slower_layers(run: RunRecord) -> list[tuple[str, float, float]]:
    """``(layer, sparse ms, dense ms)`` of every layer lowering flagged ``slower_than_dense`` on the target."""
    return [
        (lo.name, lo.slower_on_target.sparse_ms, lo.slower_on_target.dense_ms)
        for lo in run.lower.layers
        if lo.slower_on_target is not None
    ]


def label_latencies(lines: list[str], clock: str) -> list[str]:
    """Append ``(clock)`` to every prose line quoting a latency without naming its clock (table rows untouched)."""
    out = []
    for line in lines:
        if not line.lstrip().startswith("|") and _LATENCY.search(line) and not any(word in line for word in CLOCK_WORDS):
            line = f"{line} ({clock})"
        out.append(line)
    return out


def quotes_unlabelled_latency(line: str) -> bool:
    """Whether a prose line quotes a latency without naming a clock (what :func:`label_latencies` prevents)."""
    return not line.lstrip().startswith("|") and bool(_LATENCY.search(line)) and not any(word in line for word in CLOCK_WORDS)
