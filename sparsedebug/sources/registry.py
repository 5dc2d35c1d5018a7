"""The one table of input kinds: how each is recognised, its verbs, its loader and what its runs carry.

Every place that needs to know what a file is, or what a run's source can tell, asks here and
never compares a kind's name: detection (``sources.sniff``), loading (``sources.detect``),
``sparsedebug import`` (one command per importer, a generic one where the importer has no
options of its own), ``playbook run``, comparability and energy. A format is added by one
module (its loader) and one :func:`register` call; ``tests/sources/test_registry.py`` checks
that no comparison on a kind's value is written outside this module.

Two names per kind: the *input kind* (what a file given on the command line is: ``run``,
``workload``, ``trace``, ``trt_engine``) and the *source kind* written in the run record
(``RunSource.kind``: ``replay``, ``torch_trace``, ``trt_engine``), which carries the
:class:`Capabilities` that readers ask about. A run record file (``run``) has no source kind of
its own: its capabilities are those of the source it was made from.

Loaders are imported when called, so importing this module stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparsedebug.core.errors import UserError

if TYPE_CHECKING:
    from sparsedebug.records.run import RunRecord

# ``sniff(path, head)``: whether ``path`` is of this kind; ``head`` is the file's first bytes (None for a folder).
Sniff = Callable[[Path, bytes | None], bool]
# ``load(path)``: the run record an input holds.
Loader = Callable[[Path], "RunRecord"]


@dataclass(frozen=True)
class Capabilities:
    """What the runs of one source kind carry, and so what a reader may ask of them."""

    # Per-layer records (graph, lower, kernel stages name layers).
    layers: bool
    # The kernels (or tactics) each layer ran, by name.
    kernels: bool
    # A per-kernel device timeline (idle gaps, host and kernel wait).
    timeline: bool
    # The run's window in absolute UTC, so a power log can be aligned to it.
    absolute_time: bool
    # One latency sample per iteration (rank tests run on them).
    per_iteration: bool
    power: bool
    """Power readings of its own."""
    # Timed here by the built-in replay (this machine's clock), not imported.
    replayed: bool
    # Timed on an accelerator (its device is a GPU), not on this machine's CPU.
    accelerator: bool
    # A pair of its runs can be cut into a reproducer script from the records themselves (step 4 without a workload).
    reproducer: bool


@dataclass(frozen=True)
class InputKind:
    """One kind of input file (or folder) and how sparsedebug reads it."""

    # The input kind (``trace``): what ``detect_kind`` answers and a bundle records.
    name: str
    # How an error message names it: 'a PyTorch trace (.json/.json.gz with traceEvents)'.
    what: str
    # What ``playbook run`` and ``gate`` say they do with it: load, replay or import.
    verb: str
    # The ``RunSource.kind`` of the runs it gives (None: a run record, whose source is its own).
    source: str | None
    # What those runs carry (None for a run record).
    capabilities: Capabilities | None
    # ``sparsedebug import COMMAND`` (None: not imported, e.g. a record or a workload).
    command: str | None = None
    # How it is recognised from its bytes (None: a record, told by its ``kind`` field).
    sniff: Sniff | None = None
    # Its loader to a run record (None: records and workloads, which ``sources.detect`` loads itself).
    load: Loader | None = None
    # Whether a folder can be of this kind (its sniff is then asked with ``head=None``).
    folder: bool = False


def lazy(module: str, function: str) -> Loader:
    """A loader that imports ``module`` when first called and calls its ``function(path)``."""

    def load(path: Path) -> RunRecord:
        loader: Any = getattr(importlib.import_module(module), function)
        record: RunRecord = loader(path)
        return record

    return load


def _trace_sniff(path: Path, head: bytes | None) -> bool:
    """A Kineto Chrome trace: ``.json.gz`` (or gzip bytes under any name) that is not rocprofv3 JSON, or JSON whose head has
    ``traceEvents`` or is an event array."""
    if head is None:
        return False
    if path.name.lower().endswith(".gz") or head.startswith(b"\x1f\x8b"):
        return not _rocprof_sniff(path, head)
    if path.name.lower().endswith(".json"):
        text = head.decode("utf-8", errors="replace")
        return '"traceEvents"' in text or text.lstrip().startswith("[")
    return False


def _engine_sniff(path: Path, head: bytes | None) -> bool:
    """A TensorRT engine's ``--exportLayerInfo`` JSON (``Layers`` with ``LayerType``/``Name`` entries), or a folder holding one."""
    if head is None:
        return any(_engine_sniff(p, _head(p)) for p in sorted(path.glob("*.json")) if p.is_file())
    text = head.decode("utf-8", errors="replace")
    return path.name.lower().endswith(".json") and '"Layers"' in text and ('"LayerType"' in text or '"Bindings"' in text)


def lazy_sniff(module: str, function: str) -> Sniff:
    """A sniff that imports ``module`` when first asked and calls its ``function(path, head)``."""

    def sniff(path: Path, head: bytes | None) -> bool:
        found: Any = getattr(importlib.import_module(module), function)
        return bool(found(path, head))

    return sniff


_rocprof_sniff = lazy_sniff("sparsedebug.sources.importers.rocprof_sniff", "sniff_rocprof")


def _head(path: Path, size: int = 65536) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(size)
    except OSError:
        return b""


_IMPORTED = dict(replayed=False, accelerator=True, power=False, layers=True)

_KINDS: dict[str, InputKind] = {}
_SOURCES: dict[str, Capabilities] = {}


def register(kind: InputKind) -> None:
    """Add an input kind (and its source kind's capabilities); a name already taken is an ``InternalError``."""
    from sparsedebug.core.errors import InternalError

    if kind.name in _KINDS:
        raise InternalError(f"input kind {kind.name!r} is registered twice")
    if kind.command is not None and any(k.command == kind.command for k in _KINDS.values()):
        raise InternalError(f"import command {kind.command!r} is registered twice")
    _KINDS[kind.name] = kind
    if kind.source is not None and kind.capabilities is not None:
        _SOURCES[kind.source] = kind.capabilities


def unregister(name: str) -> None:
    """Remove an input kind (tests that register a throwaway format)."""
    kind = _KINDS.pop(name)
    if kind.source is not None and not any(k.source == kind.source for k in _KINDS.values()):
        _SOURCES.pop(kind.source, None)


def input_kinds() -> tuple[InputKind, ...]:
    """Every registered input kind, in registration order (records, then importers in the order their sniffs are asked)."""
    return tuple(_KINDS.values())


def input_kind(name: str) -> InputKind:
    """The input kind called ``name`` (``InternalError`` when none is: names come from detection)."""
    from sparsedebug.core.errors import InternalError

    try:
        return _KINDS[name]
    except KeyError:
        raise InternalError(f"no input kind {name!r} is registered") from None


def kind_names() -> tuple[str, ...]:
    """The names of every registered input kind."""
    return tuple(_KINDS)


def record_kind(name: str) -> str | None:
    """The input kind whose records carry ``kind: name`` (``run``, ``workload``), None for another value."""
    kind = _KINDS.get(name)
    return name if kind is not None and kind.sniff is None else None


def importers() -> tuple[InputKind, ...]:
    """The kinds ``sparsedebug import`` reads (those with a command and a loader)."""
    return tuple(k for k in _KINDS.values() if k.command is not None and k.load is not None)


def importer(command: str) -> InputKind | None:
    """The kind read by ``sparsedebug import COMMAND``, None when no kind has that command."""
    return next((k for k in importers() if k.command == command), None)


def sniffed(path: Path, head: bytes | None, accept: Collection[str] | None = None) -> InputKind | None:
    """The first importer kind (in registration order) whose sniff recognises ``path``; ``accept`` limits the kinds asked."""
    for kind in _KINDS.values():
        if kind.sniff is None or (accept is not None and kind.name not in accept):
            continue
        if head is None and not kind.folder:
            continue
        if kind.sniff(path, head):
            return kind
    return None


def source_capabilities(source: str) -> Capabilities:
    """What the runs of source kind ``source`` carry; an unknown one is a ``UserError`` (a record from another tool)."""
    caps = _SOURCES.get(source)
    if caps is None:
        raise UserError(f"source.kind {source!r}: not a source sparsedebug reads (known: {', '.join(sorted(_SOURCES))})")
    return caps


def capabilities(run: RunRecord) -> Capabilities:
    """What ``run``'s source carries: the capabilities of its ``source.kind``."""
    return source_capabilities(run.source.kind)


def replayed(run: RunRecord) -> bool:
    """Whether ``run`` was replayed here (this machine's clock), not imported."""
    return capabilities(run).replayed


# The source kind of the built-in replay's runs (``sources.replay`` writes it).
REPLAY_SOURCE = "replay"

register(InputKind(name="run", what="a run record (kind: run)", verb="load", source=None, capabilities=None))
register(InputKind(name="workload", what="a workload (kind: workload)", verb="replay", source=REPLAY_SOURCE,
                   capabilities=Capabilities(layers=True, kernels=True, timeline=False, absolute_time=False, per_iteration=True, power=False,
                                             replayed=True, accelerator=False, reproducer=False)))
register(InputKind(name="trace", what="a PyTorch trace (.json/.json.gz with traceEvents)", verb="import", source="torch_trace",
                   capabilities=Capabilities(kernels=True, timeline=True, absolute_time=True, per_iteration=True, reproducer=True, **_IMPORTED),
                   command="trace", sniff=_trace_sniff, load=lazy("sparsedebug.sources.importers.trace.importer", "import_trace")))
register(InputKind(name="trt_engine", what="a TensorRT engine export (trtexec --exportLayerInfo JSON, or a folder of trtexec exports)",
                   verb="import", source="trt_engine",
                   capabilities=Capabilities(kernels=True, timeline=False, absolute_time=False, per_iteration=True, reproducer=False, **_IMPORTED),
                   command="trt-engine", sniff=_engine_sniff, load=lazy("sparsedebug.sources.importers.tensorrt_engine", "import_engine"), folder=True))
register(InputKind(name="nsys", what="an Nsight Systems SQLite export", verb="import", source="nsys",
                   capabilities=Capabilities(kernels=True, timeline=True, absolute_time=True, per_iteration=True, reproducer=False, **_IMPORTED),
                   command="nsys", sniff=lazy_sniff("sparsedebug.sources.importers.nsys", "sniff_nsys"), load=lazy("sparsedebug.sources.importers.profiles", "import_nsys")))
register(InputKind(name="rocprof", what="a rocprofv3 kernel trace", verb="import", source="rocprof",
                   capabilities=Capabilities(kernels=True, timeline=True, absolute_time=False, per_iteration=True, reproducer=False, **_IMPORTED),
                   command="rocprof", sniff=_rocprof_sniff, load=lazy("sparsedebug.sources.importers.profiles", "import_rocprof")))
