"""The one door from a path to what it holds: a run, a workload, a trace or a bundle.

Every command that takes such a path goes through here, so that they agree on what a
file is and say the same thing when it is not what they need:

- :func:`detect_kind` says which registered input kind (``sources.registry``) a file is: a run
  record, a workload (replayed) or an imported artifact (a PyTorch profiler trace, a TensorRT
  engine export);
- :func:`load_run` turns any of the three into a ``RunRecord`` (``bisect``, ``gate``,
  ``classify``, ``fallbacks``, ``playbook run``); ``accept`` narrows the kinds a command takes;
  :func:`load_pair` loads a baseline and a candidate, two workloads replayed in one
  interleaved session (their rounds paired);
- :func:`resolve_workload` and :func:`load_workload` read a workload (``replay``, ``lower``,
  ``reduce``), :func:`load_trace` a trace with its whole-trace summary (``import trace``),
  :func:`load_bundle` a bundle directory (``memo``).

The replay engine, the trace importer and the bundle reader are imported when used, so
that importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import file_digest, parse_data, validate
from sparsedebug.records.fingerprint import FileDigest
from sparsedebug.records.run import RunRecord
from sparsedebug.records.stats import JudgementRule
from sparsedebug.sources.registry import input_kind
from sparsedebug.sources.sniff import RunKind as RunKind
from sparsedebug.sources.sniff import digest_of, read_as, run_kinds, sniff_as

if TYPE_CHECKING:
    from sparsedebug.records.ranks import RankSet
    from sparsedebug.sources.bundle import LoadedBundle
    from sparsedebug.sources.importers.trace.importer import TraceImport
    from sparsedebug.sources.runset.parse import OnRank
    from sparsedebug.sources.workload.schema import Workload

# ``progress(stage, done, total)``, as the replay calls it.
Progress = Callable[[str, int, int], None]



@dataclass(frozen=True)
class InputFile:
    """One input file as read once (:func:`read_input`): its kind, its parsed data (None for an imported artifact,
    which its importer reads) and its digest (from the bytes read, or from the file on first use when an importer
    reads it)."""

    path: Path
    kind: RunKind
    data: Any
    read_digest: FileDigest | None = None

    @cached_property
    def digest(self) -> FileDigest:
        """sha256 and size of the file, as read."""
        return self.read_digest if self.read_digest is not None else file_digest(self.path)

    @cached_property
    def workload(self) -> Workload:
        """The file validated and graph-checked as a workload, parsed once; a ``UserError`` names what is wrong."""
        from sparsedebug.sources.workload.load import parse_workload

        return parse_workload(self.data, str(self.path), require_version=True)


def read_input(path: Path, accept: Collection[RunKind] | None = None) -> InputFile:
    """Read ``path`` once (``sources.sniff.read_as``) as one of the kinds ``accept`` names (default: every kind)."""
    return InputFile(path, *read_as(path, run_kinds() if accept is None else accept))


def written_input(path: Path, text: str, kind: RunKind) -> InputFile:
    """An input of ``kind`` this process has just written to ``path`` as ``text``: parsed from the text, not read back."""
    return InputFile(path, kind, parse_data(text, path), digest_of(path, text.encode("utf-8")))


def load_workload(path: Path) -> Workload:
    """Load, validate and graph-check a workload file (``sources.workload.load``, imported when used: the
    graph checks pull in the kernels, which a trace import or a run record never needs)."""
    from sparsedebug.sources.workload.load import load_workload as load

    return load(path)

def detect_kind(path: Path) -> RunKind:
    """What a BASE/CAND file is: a run record, a workload (replayed) or a PyTorch trace (imported).

    ``.json.gz`` is a trace; ``.json`` is a trace when its head mentions
    ``traceEvents`` (or it is a bare event array), otherwise a record; YAML is a
    run record or a workload according to its ``kind`` field. Anything else is a
    one-line ``UserError`` naming the file.
    """
    kind, _ = sniff_as(path, run_kinds())
    return kind


def describe_input(path: Path) -> str:
    """A short phrase for progress lines: 'replay llama.yaml', 'import trace.json.gz', 'load run.json'."""
    return f"{input_kind(detect_kind(path)).verb} {path.name}"


def load_run(
    path: Path,
    *,
    repeats: int | None = None,
    progress: Progress | None = None,
    accept: Collection[RunKind] | None = None,
    compared: bool = False,
) -> RunRecord:
    """Load a run record as is, replay a workload, or import a trace into a ``RunRecord``.

    ``repeats`` overrides a replayed workload's repetitions. ``progress(stage, done,
    total)`` is the replay's progress callback (also called once around a trace
    import). ``accept`` lists the kinds the caller takes; another kind is a
    ``UserError`` saying what the file is and what was expected. ``compared``: the
    run is one side of a comparison, an imported profile refused when it holds too few
    forwards (:func:`check_enough_forwards`; a run record's stages say so themselves).
    """
    return load_input(read_input(path, accept), repeats=repeats, progress=progress, compared=compared)


def load_input(item: InputFile, *, repeats: int | None = None, progress: Progress | None = None, compared: bool = False) -> RunRecord:
    """:func:`load_run` of an input already read (:func:`read_input`): nothing is read again but an imported
    artifact, which its importer reads."""
    kind = input_kind(item.kind)
    if kind.load is None and kind.source is None:  # a run record, loaded as is
        return validate(RunRecord, item.data, str(item.path))
    if kind.load is None:  # a workload, replayed
        from sparsedebug.sources.replay.replay import replay

        return replay(item.workload, repeats=repeats, progress=progress, source_path=item.path, source_digest=item.digest)
    if progress is not None:
        progress(kind.verb, 0, 1)
    record = kind.load(item.path)
    if progress is not None:
        progress(kind.verb, 1, 1)
    if compared:
        check_enough_forwards(record, item.path)
    return record


# Fewest forwards an imported profile must hold to be compared as a run: one sample has no spread, so nothing can
# say whether a difference to it is more than noise (two are "too few samples" to the stages, which say so).
MIN_COMPARED_FORWARDS = 2


def check_enough_forwards(run: RunRecord, path: Path) -> None:
    """Refuse an imported profile compared as a run when it measured a single forward (a trace of one kernel event,
    one profiler step): a ratio of two single samples is no speedup. A run with none is left to the stages, which
    say so (``locate.outcome.no_samples``), as they say a run of two is too few to decide."""
    count = len(run.outcome.latency_samples_ms)
    if 0 < count < MIN_COMPARED_FORWARDS:
        raise UserError(
            f"{path}: outcome.latency_samples_ms: {count} forward measured; a run compared with another needs at least "
            f"{MIN_COMPARED_FORWARDS} (profile more steps: one sample per iteration)"
        )


def load_pair(
    base: Path,
    cand: Path,
    *,
    repeats: int | None = None,
    progress: Progress | None = None,
    accept: Collection[RunKind] | None = None,
    latency: tuple[Path, Path] | None = None,
    rule: JudgementRule | None = None,
) -> tuple[RunRecord, RunRecord]:
    """A baseline and a candidate as :func:`load_run` gives each; two workloads are replayed in one interleaved session.

    Two workloads are replayed together (:func:`sparsedebug.sources.replay.replay.replay_pair`):
    their rounds alternate, so the machine's drift hits both alike and the comparison runs
    round by round. Anything else is loaded, replayed or imported one at a time. ``latency``
    (``--latency BASE CAND``): untraced latencies that replace the outcome's
    (:func:`sparsedebug.sources.latency.with_untraced_latencies`), read before anything is loaded. ``rule``: the
    judgement rule a replayed session samples for until its ratio settles (default: the rule's defaults).
    """
    accept = run_kinds() if accept is None else accept
    if latency is not None:
        from sparsedebug.sources.latency import load_latencies, with_untraced_latencies

        for path in latency:
            load_latencies(path)  # a bad file is refused before any work
        runs = load_pair(base, cand, repeats=repeats, progress=progress, accept=accept, rule=rule)
        return with_untraced_latencies(runs[0], runs[1], latency)
    return load_inputs(read_input(base, accept), read_input(cand, accept), repeats=repeats, progress=progress, rule=rule)


def load_inputs(
    base: InputFile, cand: InputFile, *, repeats: int | None = None, progress: Progress | None = None, rule: JudgementRule | None = None
) -> tuple[RunRecord, RunRecord]:
    """:func:`load_pair` of two inputs already read (:func:`read_input`); two workloads replayed in one session."""
    if replayed_together(base.kind) and replayed_together(cand.kind):
        from sparsedebug.sources.replay.replay import replay_pair

        return replay_pair(base.workload, cand.workload, repeats=repeats, progress=progress, base_path=base.path, cand_path=cand.path,
                           rule=rule, digests=(base.digest, cand.digest))
    return (
        load_input(base, repeats=repeats, progress=progress, compared=True),
        load_input(cand, repeats=repeats, progress=progress, compared=True),
    )


def replayed_together(name: RunKind) -> bool:
    """Whether inputs of kind ``name`` are replayed here (two of them: in one interleaved session)."""
    caps = input_kind(name).capabilities
    return caps is not None and caps.replayed


def resolve_workload(argument: str) -> Path:
    """A workload file path, or the name of an embedded workload (``llama_2of4``) when no such file exists."""
    path = Path(argument)
    if path.exists() or path.suffix in (".yaml", ".yml", ".json") or "/" in argument:
        return path
    from sparsedebug.core.resources import embedded_workload

    return embedded_workload(argument)


def load_trace(path: Path, *, include_last_step: bool = False, allow_dropped: bool = False) -> TraceImport:
    """Import a PyTorch profiler Chrome trace (``.json`` or ``.json.gz``): the run record and the whole-trace summary
    (``include_last_step``: HTA's breakdown keeps the last ProfilerStep, as HTA's include_last_profiler_step;
    ``allow_dropped``: import a trace whose kernel events all lack usable timing, else refused)."""
    from sparsedebug.sources.importers.trace.importer import analyze_trace

    return analyze_trace(path, include_last_step=include_last_step, allow_dropped=allow_dropped)


def load_run_set(argument: str, *, executor: str = "local", on_rank: OnRank | None = None) -> RankSet:
    """A run set (a directory of per-rank traces, or a glob): every rank summarised through ``executor``;
    ``on_rank(summary, done, total)`` as each rank arrives."""
    from sparsedebug.sources.runset.discover import discover
    from sparsedebug.sources.runset.parse import parse_run_set

    return parse_run_set(discover([argument]), argument, executor=executor, on_rank=on_rank)


def load_bundle(root: Path) -> LoadedBundle:
    """Read a bundle directory written by ``playbook run`` back into its records."""
    from sparsedebug.sources.bundle import load_bundle as read_bundle

    return read_bundle(root)
