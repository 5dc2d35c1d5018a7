"""The memo's build and runtime tags: what the walk ran on and what each run ran on, as recorded."""

from __future__ import annotations

from sparsedebug.records.fingerprint import Fingerprint
from sparsedebug.records.loaded import LoadedBundle
from sparsedebug.records.report import BackendStack
from sparsedebug.records.run import RunRecord
from sparsedebug.render.document import figures
from sparsedebug.render.words.fingerprint import gpu_probe_words


def build_tags(b: LoadedBundle) -> list[str]:
    """The memo's build and runtime tags: the walk's environment, and per run its source, backend, stack and files."""
    lines = ["- **Build and runtime tags**:"]
    fp = b.fingerprint
    if fp is not None:
        blas = ", ".join(f"{lib.internal_api} {lib.version or '?'} ({lib.num_threads} threads)" for lib in fp.numpy.blas) or "none"
        git = f"{fp.git.revision[:12]}{' dirty' if fp.git.dirty else ''}" if fp.git else "not a git checkout"
        lines.append(
            f"  - Analysing machine (fingerprint.json, where the walk ran): git of the folder it ran in {git}; {fp.python.implementation} "
            f"{fp.python.version}; {fp.platform.system} {fp.platform.release} {fp.platform.machine}; "
            f"CPU {fp.cpu.model or '?'} ({fp.cpu.logical_cores} logical cores); numpy {fp.numpy.version}, BLAS {blas}"
            + _walk_stack(fp)
            + "."
        )
    for role, run in (("baseline", b.baseline), ("candidate", b.candidate), ("fixed", b.fixed)):
        if run is None:
            continue
        tags = [f"source {run.source.kind}", f"backend `{run.lower.backend}`"]
        rf = run.fingerprint
        if rf is not None:
            if rf.torch is not None:
                tags.append(f"torch {rf.torch.version} CUDA {rf.torch.cuda} cuSPARSELt {rf.torch.cusparselt or 'not installed'}")
            for gpu in rf.gpus:
                tags.append(f"GPU {gpu.name} driver {gpu.driver}")
        for f in run.source.files[:2]:
            tags.append(f"{f.path.rsplit('/', 1)[-1]} sha256:{f.sha256[:12]}")
        if run.workload is not None and run.workload.file is not None:
            tags.append(f"workload sha256:{run.workload.file.sha256[:12]}")
        if run.schedule.threads is not None:
            tags.append(f"{run.schedule.threads} threads")
        tags += _stack_tags(run, figures(b, role).stacks)
        lines.append(f"  - {role} `{run.name}`: " + "; ".join(tags) + ".")
    return lines


def _walk_stack(fp: Fingerprint) -> str:
    """torch, CUDA, cuSPARSELt and GPU driver of the walk environment, as the fingerprint records them."""
    parts = []
    if fp.torch is not None:
        parts.append(f"torch {fp.torch.version} CUDA {fp.torch.cuda or 'none'} cuSPARSELt {fp.torch.cusparselt or 'not installed'}")
    else:
        parts.append("torch not installed")
    parts += [f"GPU {gpu.name} driver {gpu.driver or '?'}" for gpu in fp.gpus] or [f"no GPU ({gpu_probe_words(fp.gpu_probe)})"]
    return "; " + "; ".join(parts)


def _stack_tags(run: RunRecord, stacks: list[BackendStack]) -> list[str]:
    """The stack a run ran on, from what its trace and fingerprint record, and the stack profile that judges it
    (``stacks``: each sparse backend's, ``signoff.report.backend_stacks``)."""
    tags: list[str] = []
    rt = run.source.runtime
    if rt is not None:
        device = f"{rt.device or 'GPU ?'}" + (f" (compute capability {rt.capability})" if rt.capability else "")
        tags.append(
            f"traced on {device}, CUDA runtime {rt.cuda_runtime or 'not recorded'}, CUDA driver API {rt.cuda_driver or 'not recorded'}"
            + (f", CUPTI {rt.cupti}" if rt.cupti else "")
            + ("; CUDA graph replay" if rt.cuda_graph else "; eager launch")
        )
    rf = run.fingerprint
    torch_version = rf.torch.version if rf is not None and rf.torch is not None else None
    for stack in stacks:
        ops = ", ".join(f"`{op}`" for op in rt.sparse_ops) if rt is not None else ""
        if stack.profile is None or stack.path is None:
            tags.append(f"sparse backend {stack.backend} ({ops}): no stack profile knows it")
            continue
        measured = ", ".join(stack.measured_at)
        version = f"{stack.package} {torch_version}" if torch_version else f"{stack.package} version not recorded in the trace"
        cusparselt = rf.torch.cusparselt if rf is not None and rf.torch is not None else None
        tags.append(
            f"stack {stack.title}, path `{stack.path}` (sparse ops {ops}; {version}; "
            f"cuSPARSELt {cusparselt or 'version not recorded in the trace'}); "
            f"verdicts from stack profile `{stack.profile}`" + (f", rules measured at {stack.package} {measured}" if measured else "")
        )
    return tags
