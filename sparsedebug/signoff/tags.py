"""The memo's build and runtime tags: each run's from its own artifact, the analysing machine's as such.

A trace records the device, its compute capability, the CUDA runtime and driver API and the launch mode it ran
under; a replay's run record carries its own fingerprint. The machine that analyses the runs (``fingerprint.json``)
is another machine: its tags are stated apart and labelled, never as a run's.
"""

from __future__ import annotations

from pathlib import PurePath

from sparsedebug import __version__
from sparsedebug.records.fingerprint import BlasLibrary
from sparsedebug.records.memo import Claim
from sparsedebug.records.run import RunRecord
from sparsedebug.signoff.metrics import run_clock
from sparsedebug.sources.bundle import LoadedBundle
from sparsedebug.sources.registry import input_kinds


def run_tags(run: RunRecord) -> dict[str, str]:
    """A run's build and runtime tags from its own artifact: the trace's metadata (device, compute capability, CUDA
    runtime and driver API, launch mode), the run's own fingerprint where it has one (torch, CUDA, GPU driver), else
    its device record; only the tags the artifact holds. ``clock``: where its latencies were timed (``measured``: a
    replay on the analysing machine itself)."""
    tags: dict[str, str] = {"source": run.source.kind, "clock": run_clock(run)}
    what = next((k.what for k in input_kinds() if k.source == run.source.kind), None)
    if what:  # the input registry's words for the artifact, without its file-format detail
        tags["source_what"] = what.split(" (")[0]
    rt, rf = run.source.runtime, run.fingerprint
    device = (rt.device if rt is not None else None) or (", ".join(g.name for g in rf.gpus) if rf is not None and rf.gpus else None) \
        or (run.device.name if run.device is not None else None)
    if device:
        tags["device"] = device
    capability = (rt.capability if rt is not None else None) or (run.device.compute_capability if run.device is not None else None)
    if capability:
        tags["capability"] = capability
    if rt is not None:
        tags.update({k: v for k, v in (("cuda_runtime", rt.cuda_runtime), ("cuda_driver", rt.cuda_driver)) if v})
        tags["launch"] = "cuda_graph" if rt.cuda_graph else "eager"
    if rf is not None:
        if rf.torch is not None:
            tags["torch"] = rf.torch.version
            if rf.torch.cuda:
                tags.setdefault("cuda_runtime", rf.torch.cuda)
        drivers = sorted({g.driver for g in rf.gpus if g.driver})
        if drivers:
            tags["driver"] = ", ".join(drivers)
    tags["backend"] = run.lower.backend
    return tags


# Tags only the analysing machine has (``machine.<tag>``; torch is a run's tag too, from its own fingerprint): a run
# timed elsewhere (a trace, an export) never carries them.
MACHINE_ONLY_TAGS: frozenset[str] = frozenset({"sparsedebug", "git", "python", "numpy", "blas", "gpu"})

LIKE_MAX_DIFFERENCES = 2
"""A run whose tags differ from the run before it in at most this many is stated as that run but those tags."""


def numpy_blas(libraries: list[BlasLibrary]) -> list[BlasLibrary]:
    """The BLAS libraries numpy itself ships (a wheel's ``numpy.libs``), when the loaded ones include any: another
    package's BLAS loaded in the same process (scipy's) does not run numpy's matmuls; else every BLAS library loaded."""
    blas = [lib for lib in libraries if lib.user_api == "blas"]
    own = [lib for lib in blas if lib.filepath and any(part.startswith("numpy") for part in PurePath(lib.filepath).parts)]
    return own or blas


def build_tags_claim(b: LoadedBundle) -> Claim:
    """Each run's tags from its own artifact (``run.<role>.<tag>``, judged run first; a run whose tags equal the one
    before it says so, one differing in a tag or two states only those: ``run.<role>.like``), and the analysing machine's as such (``machine.<tag>``): never one machine's tags as another's."""
    terms: dict[str, str] = {}
    roles: list[str] = []
    previous: dict[str, str] | None = None
    for role, run in reversed([(r, run) for r, run in (("baseline", b.baseline), ("candidate", b.candidate), ("fixed", b.fixed)) if run is not None]):
        tags = run_tags(run)
        roles.append(role)
        differ = {k: v for k, v in tags.items() if previous is not None and previous.get(k) != v}
        if tags == previous:
            terms[f"run.{role}.same_as"] = roles[-2]
        elif previous is not None and previous.keys() == tags.keys() and len(differ) <= LIKE_MAX_DIFFERENCES \
                and not differ.keys() & {"source", "source_what", "clock"}:
            terms[f"run.{role}.like"] = roles[-2]  # the run before it but for a tag or two: only those are stated
            terms.update({".".join(("run", role, k)): v for k, v in differ.items()})
        else:
            terms.update({".".join(("run", role, k)): v for k, v in tags.items()})
        previous = tags
    fp = b.fingerprint
    if fp is not None:
        terms["machine.sparsedebug"] = __version__
        if fp.git is not None:  # the git checkout of the folder the walk ran in (the user's project), when there is one
            terms["machine.git"] = fp.git.revision[:12] + ("+dirty" if fp.git.dirty else "")
        terms["machine.python"] = f"{fp.python.implementation} {fp.python.version}"
        terms["machine.numpy"] = fp.numpy.version
        blas = [f"{lib.internal_api} {lib.version or '?'}" for lib in numpy_blas(fp.numpy.blas)]
        if blas:
            terms["machine.blas"] = ", ".join(blas)
        if fp.torch is not None:
            terms["machine.torch"] = fp.torch.version
        names = [g.name for g in fp.gpus]
        terms["machine.gpu"] = ", ".join(f"{names.count(n)}x {n}" if names.count(n) > 1 else n for n in dict.fromkeys(names)) or "none"
    return Claim(kind="build_tags", terms=terms, items=roles)
