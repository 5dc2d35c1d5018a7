"""Layers of a trace: the model call each GPU op belongs to, its phase, and a name stable across profiles.

A layer is, in order of preference, for the innermost host range around the
call that launched a GPU op:

1. a ``record_function`` annotation (``layers.0.mlp.down_proj``), except the
   containers profilers and frameworks add (``ProfilerStep#N``,
   ``Optimizer.step#...``, ``## forward ##``, ``DistributedDataParallel.forward``...);
2. a module call (``nn.Module:`` python_function events, ``with_stack=True``),
   named by its module path: class names from the outermost module down, with the
   position among same-class siblings when a parent calls several
   (``LlamaModel.LlamaDecoderLayer.3.LlamaMLP.Linear.2``);
3. the top-level op the model called (torch.compile regions are looked into),
   named ``{op}#{k} [{shape}]``: ``k`` counts the calls of that op with that shape
   within the iteration, the shape is a linear op's weight (out x in) or the first
   input's (``linear#3 [11008x4096]``), so two profiles of the same model match
   layer by layer;
4. otherwise (no CPU ops: a CUDA-graph replay, kernels launched outside any op)
   the kernel name.

Phases (training traces) come from the autograd structure, never from an
annotation's text: an op launched under the optimizer's own ``Optimizer.step#``/
``zero_grad#`` ranges is ``optimizer``; one launched under an autograd
``evaluate_function`` node, by an op linked to the forward thread that created its
node (``Fwd thread id``), or from an autograd engine thread (one that runs no forward
op) is ``backward``; the rest ``forward``. Markers such as ``## forward: ... ##`` are
containers, not layers, and mark no phase. Backward layers are named after the forward layer whose op
created their autograd node, prefixed ``backward:``
(``backward:layers.0.mlp.down_proj``): an ``evaluate_function`` range carries the
node's ``Sequence number``, and the node's creator is the last forward op that
recorded that number before the backward ran (``LayerResolver.forward_op``).
Their kind and shapes are the forward layer's; their dispatch evidence comes
from the ops the engine ran (the backward GEMMs). Backward ops with no such
link (``AccumulateGrad``, traces without sequence numbers) are named like any
other op; ordinals count per iteration (a linked node's is its forward op's,
others' the window they run in), thread by thread, in program order, so neither
the interleaving of threads nor timing noise renames them.
Optimizer layers are prefixed ``optimizer:``. A layer is therefore always in
one phase.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sparsedebug.sources.importers.trace.read.events import (
    GpuOp,
    HostRange,
    Thread,
    TraceEvents,
    as_int,
)
from sparsedebug.sources.importers.trace.structure.host_tree import ancestors, gpu_launch_count, innermost
from sparsedebug.sources.importers.trace.structure.ops import (
    is_container_op,
    shape_text,
    signature,
    strip_namespace,
)

_CONTAINER_PREFIXES = ("ProfilerStep#", "Optimizer.step#", "Optimizer.zero_grad#", "enumerate(DataLoader)#")
_CONTAINER_NAMES = frozenset({
    "## forward ##", "## backward ##", "## optimizer ##", "## zero_grad ##", "DistributedDataParallel.forward",
    "FullyShardedDataParallel.forward", "DataParallel.forward",
})
_EVALUATE = "autograd::engine::evaluate_function:"
# The OS thread id Kineto puts in front of a thread's name (``thread 4299 (pt_autograd_0)``).
_THREAD_ID = re.compile(r"^thread \d+\s*")
PHASE_PREFIX = {"forward": "", "backward": "backward:", "optimizer": "optimizer:"}


# ``## forward ##``, ``## forward: model ##``, ``## backward ##``: markers around a whole pass (containers, not layers,
# no phase). Other ``## name ##`` regions (torchrec's ``## data_load ##``) stay layers.
_MARKER = re.compile(r"^## (forward|backward|optimizer|zero_grad)\b.*##$")


def is_container_annotation(name: str) -> bool:
    """An annotation that marks a phase or a step rather than a layer."""
    return name.startswith(_CONTAINER_PREFIXES) or name in _CONTAINER_NAMES or bool(_MARKER.match(name))


def annotation_phase(name: str) -> str | None:
    """The phase an annotation marks: only the optimizer's own step and zero_grad ranges (``torch.optim`` records them).

    Forward and backward are never read from an annotation's text (a ``## forward: ... ##``
    marker says nothing the autograd structure does not): see :meth:`LayerResolver.phase`.
    """
    if name.startswith(("Optimizer.step#", "Optimizer.zero_grad#")):
        return "optimizer"
    return None


def is_backward_op(r: HostRange) -> bool:
    """An op the autograd engine ran: an ``evaluate_function`` node, or one linked to the forward thread that created its node."""
    return r.kind == "op" and (r.name.startswith(_EVALUATE) or (r.fwd_thread is not None and r.fwd_thread > 0))


def _module_class(name: str) -> str:
    base, _sep, tail = name.rpartition("_")
    return base if base and tail.isdigit() else name


@dataclass
class LayerCall:
    """One call of one layer: the unit of per-call kernel samples."""

    key: Any
    identity: str  # annotation, module, aten_op, kernel
    phase: str
    range: HostRange | None = None
    forward_key: Any = None  # backward calls: the forward call whose autograd nodes they run
    name: str = ""
    nodes: list[int] = field(default_factory=list)  # backward calls: their evaluate_function ranges


class LayerResolver:
    """Maps GPU ops to layer calls, over the host tree of one trace."""

    def __init__(self, trace: TraceEvents, kids: list[list[int]]) -> None:
        self.trace = trace
        self.ranges = trace.ranges
        self.kids = kids
        self.launch_totals = gpu_launch_count(trace.ranges, kids)
        self.own, self.chain = _chain_marks(trace.ranges)
        self.backward_threads = self._backward_threads()
        self.forward_ops_of_seq = self._forward_ops_of_seq()
        self.module_paths = module_paths(self.ranges, kids)
        self.calls: dict[Any, LayerCall] = {}
        self._range_calls: dict[int, LayerCall | None] = {}
        self._by_start: list[HostRange] | None = None

    def by_start(self) -> list[HostRange]:
        """The host ranges in start order (stable: equal starts in file order), sorted once."""
        if self._by_start is None:
            self._by_start = sorted(self.ranges, key=_start)
        return self._by_start

    def outer_marks(self, r: HostRange) -> int:
        """The marks (``_BACKWARD``, ``_OPTIMIZER``, ``_DEFINES``) of ``r``'s ancestors, ``r`` itself left out."""
        return self.chain[r.parent] if r.parent >= 0 else 0

    def _backward_threads(self) -> set[Thread]:
        """The autograd engine's own threads (``pt_autograd_*``), which run nothing but backward.

        A thread that also runs the forward (backward called on the main thread) is not one:
        there, only the ops under an ``evaluate_function`` node or linked to a forward thread
        are backward (:meth:`phase`).
        """
        named = {t for t, names in self.trace.thread_names.items() if any("autograd" in _THREAD_ID.sub("", n) for n in names)}
        engine = {r.thread for r in self.ranges if r.kind == "op" and r.name.startswith(_EVALUATE)}
        chain = self.chain
        forward = {r.thread for r in self.ranges if r.kind == "op" and r.seq is not None and not chain[r.index] & _BACKWARD}
        return (named | engine) - forward

    def _forward_ops_of_seq(self) -> dict[int, tuple[list[float], list[int]]]:
        """Forward ops by autograd ``Sequence number``: (start times, indices), in start order."""
        found: dict[int, list[tuple[float, int]]] = defaultdict(list)
        chain = self.chain
        for r in self.ranges:
            # not run by the engine (itself a node or linked op, or inside a node on a shared thread)
            if r.kind == "op" and r.seq is not None and r.thread not in self.backward_threads and not chain[r.index] & _BACKWARD:
                found[r.seq].append((r.ts, r.index))
        out: dict[int, tuple[list[float], list[int]]] = {}
        for seq, items in found.items():
            items.sort()
            out[seq] = ([ts for ts, _i in items], [i for _ts, i in items])
        return out

    def forward_op(self, node: HostRange) -> int | None:
        """The forward op that created the autograd node ``node`` (an ``evaluate_function`` range) runs the backward of.

        The profiler records the thread's next sequence number on every op
        dispatched through autograd, and a node takes it when an op creates one;
        so every op from the previous node's creation up to this one's carries it
        (``aten::linear`` and its ``aten::t``, an ``aten::to`` before an
        ``aten::mse_loss``, the last ops of the previous iteration). The creator
        is the last of them to start (or one inside it), before the backward ran.
        """
        if node.seq is None or node.seq not in self.forward_ops_of_seq:
            return None
        starts, indices = self.forward_ops_of_seq[node.seq]
        k = bisect.bisect_right(starts, node.ts) - 1
        return indices[k] if k >= 0 else None

    def thread_order(self) -> dict[Thread, int]:
        """A rank for every host thread that two profiles of one program share: not its OS id, not its timing.

        Forward threads before the autograd engine's, then by thread name with
        the OS id taken out (``thread 4299 (pt_autograd_0)`` -> ``pt_autograd_0``),
        then by first range start (threads with the same name and role).
        """
        first: dict[Thread, float] = {}
        for r in self.ranges:
            first[r.thread] = min(first.get(r.thread, r.ts), r.ts)

        def key(thread: Thread) -> tuple[bool, str, float]:
            names = sorted(_THREAD_ID.sub("", n).strip() for n in self.trace.thread_names.get(thread, ()))
            return (thread in self.backward_threads, names[0] if names else "", first[thread])

        return {thread: k for k, thread in enumerate(sorted(first, key=key))}

    def is_layer_range(self, r: HostRange) -> bool:
        """Annotations (not containers) and module calls define layers."""
        return r.kind == "module" or (r.kind == "annotation" and not is_container_annotation(r.name))

    def phase(self, chain: list[HostRange], thread: Thread | None) -> str:
        """Phase of a call from the autograd structure: its ancestor chain (innermost first) and the launching thread.

        ``optimizer`` under the optimizer's own step range; ``backward`` on an autograd engine
        thread, under an ``evaluate_function`` node, or for an op linked to the forward thread
        that created its node (``Fwd thread id``); else ``forward``.
        """
        backward = thread in self.backward_threads
        for r in chain:
            if r.kind == "annotation" and annotation_phase(r.name) == "optimizer":
                return "optimizer"
            if is_backward_op(r):
                backward = True
        return "backward" if backward else "forward"

    def phase_of(self, index: int, thread: Thread | None) -> str:
        """:meth:`phase` of the chain from range ``index`` up (its marks, computed once per range)."""
        marks = self.chain[index]
        if marks & _OPTIMIZER:
            return "optimizer"
        return "backward" if marks & _BACKWARD or thread in self.backward_threads else "forward"

    def _defining(self, chain: list[HostRange]) -> tuple[HostRange | None, HostRange | None]:
        """The innermost layer range and the outermost (non-container) op of a chain."""
        layer = top = None
        own = self.own
        for r in chain:
            if own[r.index] & _DEFINES:
                if r.kind == "op":
                    top = r
                elif layer is None:
                    layer = r
        return layer, top

    def call_for_range(self, index: int) -> LayerCall | None:
        """The layer call a host range (and every GPU op launched inside it) belongs to."""
        try:
            return self._range_calls[index]
        except KeyError:
            call = self._range_calls[index] = self._call_for_range(index)
            return call

    def _call_for_range(self, index: int) -> LayerCall | None:
        chain = list(ancestors(self.ranges, index))
        phase = self.phase_of(index, self.ranges[index].thread)
        layer, top = self._defining(chain)
        if layer is not None:
            return self._call(layer.index, "annotation" if layer.kind == "annotation" else "module", phase, layer)
        if top is None:
            return None
        if phase == "backward" and top.name.startswith(_EVALUATE) and top.seq is not None:
            forward = self.forward_op(top)
            forward_call = self.call_for_range(forward) if forward is not None else None
            if forward_call is not None and forward_call.phase == "forward":
                call = self._call(("backward", forward_call.key), forward_call.identity, "backward", forward_call.range)
                call.forward_key = forward_call.key
                if top.index not in call.nodes:
                    call.nodes.append(top.index)
                return call
        return self._call(top.index, "aten_op", phase, top)

    def _call(self, key: Any, identity: str, phase: str, r: HostRange | None) -> LayerCall:
        call = self.calls.get(key)
        if call is None:
            call = self.calls[key] = LayerCall(key, identity, phase, r)
        return call

    def call_for_op(self, op: GpuOp, gpu_annotation: HostRange | None) -> LayerCall:
        """The layer call of one GPU op (kernel-name layers when the CPU side is unknown or a graph replay)."""
        if not op.launch_name.startswith("cudaGraphLaunch") and op.host is not None:
            call = self.call_for_range(op.host)
            if call is not None:
                return call
        if gpu_annotation is not None:
            return self._call(("gpu", gpu_annotation.name, gpu_annotation.index), "annotation", "forward", gpu_annotation)
        phase = "backward" if op.launch_thread in self.backward_threads else "forward"
        return self._call(("kernel", op.name), "kernel", phase, None)

    def top_ops(self) -> Iterator[HostRange]:
        """Every top-level (outermost non-container) op outside layer ranges, in start order."""
        for r in self.by_start():
            if r.kind != "op" or is_container_op(r.name) or self.outer_marks(r) & _DEFINES:
                continue
            yield r

    def main_sequence(self) -> list[HostRange]:
        """The outermost layer ranges and top-level ops that launched GPU work, on the (non-autograd) thread that launched the most."""
        by_thread: dict[Thread, list[HostRange]] = defaultdict(list)
        for r in self.by_start():
            if self.launch_totals[r.index] == 0 or r.thread in self.backward_threads:
                continue
            if not self.own[r.index] & _DEFINES or self.outer_marks(r) & _DEFINES:
                continue
            by_thread[r.thread].append(r)
        if not by_thread:
            return []
        return max(by_thread.values(), key=lambda items: sum(self.launch_totals[r.index] for r in items))

    def call_signature(self, r: HostRange) -> str:
        """What makes two calls in the main sequence the same step of the model."""
        if r.kind == "annotation":
            return "annotation:" + r.name
        if r.kind == "module":
            return "module:" + self.module_paths.get(r.index, r.name)
        return signature(r)


# Marks of a range: an op the autograd engine ran (``is_backward_op``), the optimizer's own step range, and a range
# that defines a layer call (a layer range, or an op that is no container): ``_chain_marks`` ORs them up the tree.
_BACKWARD, _OPTIMIZER, _DEFINES = 1, 2, 4


def _start(r: HostRange) -> float:
    return r.ts


def _marks(r: HostRange) -> int:
    """One range's own marks (see ``_chain_marks``)."""
    marks = 0
    if r.kind == "op":
        if is_backward_op(r):
            marks |= _BACKWARD
        if not is_container_op(r.name):
            marks |= _DEFINES
    elif r.kind == "module" or (r.kind == "annotation" and not is_container_annotation(r.name)):
        marks |= _DEFINES
    if r.kind == "annotation" and annotation_phase(r.name) == "optimizer":
        marks |= _OPTIMIZER
    return marks


def _chain_marks(ranges: list[HostRange]) -> tuple[list[int], list[int]]:
    """Every range's own marks, and the OR of its own and its ancestors' (each range visited once)."""
    by_name: dict[tuple[str, str, bool], int] = {}  # the marks depend on kind, name and a forward-thread link only
    own = []
    for r in ranges:
        key = (r.kind, r.name, r.fwd_thread is not None and r.fwd_thread > 0)
        marks = by_name.get(key)
        if marks is None:
            marks = by_name[key] = _marks(r)
        own.append(marks)
    out = [-1] * len(ranges)
    for i in range(len(ranges)):
        path: list[int] = []
        j = i
        while j >= 0 and out[j] < 0:
            path.append(j)
            j = ranges[j].parent
        acc = out[j] if j >= 0 else 0
        for k in reversed(path):
            acc |= own[k]
            out[k] = acc
    return own, out


def module_paths(ranges: list[HostRange], kids: list[list[int]]) -> dict[int, str]:
    """A stable dotted path for every module call (see the module docstring)."""
    siblings: dict[tuple[int, str], list[str]] = defaultdict(list)
    parent_module: dict[int, int] = {}
    for r in sorted((r for r in ranges if r.kind == "module"), key=lambda r: r.ts):
        parent = next((a.index for a in ancestors(ranges, r.parent) if a.kind == "module"), -1)
        parent_module[r.index] = parent
        seen = siblings[(parent, _module_class(r.name))]
        if r.name not in seen:
            seen.append(r.name)
    paths: dict[int, str] = {}
    for index in sorted(parent_module, key=lambda i: ranges[i].ts):
        r = ranges[index]
        parent = parent_module[index]
        cls = _module_class(r.name)
        same = siblings[(parent, cls)]
        part = cls if len(same) == 1 else f"{cls}.{same.index(r.name)}"
        paths[index] = part if parent < 0 else f"{paths[parent]}.{part}"
    return paths


def name_calls(resolver: LayerResolver, iteration_of: Callable[[float], int]) -> None:
    """Give every layer call its layer name (aten-op ordinals count calls per iteration, see the module docstring).

    Ordinals count in the model's order, never in an order timing noise could
    change: per iteration and phase, thread by thread (``thread_order``), in
    start order within a thread (one thread runs its calls in program order).
    A backward node belongs to the iteration of the forward op that created it.
    """
    rank = resolver.thread_order()
    counted: list[tuple[tuple[int, str, int, float], HostRange]] = []
    for r in resolver.top_ops():
        phase = resolver.phase_of(r.index, r.thread)
        creator = resolver.forward_op(r) if r.name.startswith(_EVALUATE) else None
        iteration = iteration_of(resolver.ranges[creator].ts if creator is not None else r.ts)
        counted.append(((iteration, phase, rank[r.thread], r.ts), r))
    counted.sort(key=lambda item: item[0])
    ordinals: dict[int, str] = {}
    counter: Counter[tuple[int, str, str]] = Counter()
    for (iteration, phase, _rank, _ts), r in counted:
        label = strip_namespace(r.name)
        shape = shape_text(r)
        key = (iteration, phase, f"{label}|{shape}")
        k = counter[key]
        counter[key] += 1
        ordinals[r.index] = f"{label}#{k}" + (f" [{shape}]" if shape else "")
    for call in resolver.calls.values():
        source = call if call.forward_key is None else resolver.calls[call.forward_key]
        call.name = PHASE_PREFIX[call.phase] + _base_name(source, resolver, ordinals)


def _base_name(call: LayerCall, resolver: LayerResolver, ordinals: dict[int, str]) -> str:
    r = call.range
    if call.identity == "kernel":
        return str(call.key[1])
    if r is None:
        return str(call.key)
    if call.identity == "module":
        return resolver.module_paths.get(r.index, r.name)
    if call.identity == "aten_op":
        return ordinals.get(r.index, strip_namespace(r.name))
    return r.name


def ops_under(resolver: LayerResolver, call: LayerCall) -> list[HostRange]:
    """The ops of one layer call: its range's subtree, without nested layer ranges (they are layers of their own)."""
    root = call.range
    if root is None or root.index >= len(resolver.ranges) or resolver.ranges[root.index] is not root:
        return []  # a kernel-name layer or a GPU-side annotation: no CPU ops under it
    return _subtree_ops(resolver, [root.index])


def top_level_ops(resolver: LayerResolver, call: LayerCall) -> list[HostRange]:
    """The ops the model called in one layer call, outermost only (not the ops they dispatch to), in start order.

    A layer found from a top-level op is that op; an annotation or a module call holds the
    outermost ops of its subtree (torch.compile regions looked into, nested layers left out).
    """
    root = call.range
    if root is None or root.index >= len(resolver.ranges) or resolver.ranges[root.index] is not root:
        return []
    if root.kind == "op" and not is_container_op(root.name):
        return [root]
    out: list[HostRange] = []
    todo = [root.index]
    while todo:
        current = resolver.ranges[todo.pop()]
        for child in reversed(resolver.kids[current.index]):
            item = resolver.ranges[child]
            if resolver.is_layer_range(item):
                continue
            if item.kind == "op" and not is_container_op(item.name):
                out.append(item)
            else:
                todo.append(child)
    return sorted(out, key=lambda r: r.ts)


def op_label(r: HostRange) -> str:
    """An op as a layer's composition lists it: its name and naming shape (``linear [4096x4096]``), no ordinal."""
    shape = shape_text(r)
    return strip_namespace(r.name) + (f" [{shape}]" if shape else "")


def backward_ops(resolver: LayerResolver, call: LayerCall) -> list[HostRange]:
    """The ops the autograd engine ran for a backward call: its ``evaluate_function`` ranges' subtrees, in start order."""
    return _subtree_ops(resolver, sorted(call.nodes, key=lambda i: resolver.ranges[i].ts))


def _subtree_ops(resolver: LayerResolver, roots: list[int]) -> list[HostRange]:
    out: list[HostRange] = []
    todo = list(reversed(roots))
    while todo:
        current = resolver.ranges[todo.pop()]
        if current.kind == "op":
            out.append(current)
        for child in reversed(resolver.kids[current.index]):
            if not resolver.is_layer_range(resolver.ranges[child]):
                todo.append(child)
    return out


def gpu_annotation_of(trace: TraceEvents, ops: list[GpuOp]) -> dict[int, HostRange]:
    """For GPU ops without a host range: the innermost GPU-side annotation on their stream around their midpoint."""
    by_track: dict[Thread, list[HostRange]] = defaultdict(list)
    for ann in trace.gpu_annotations:
        by_track[ann.thread].append(ann)
    for index, ann in enumerate(trace.gpu_annotations):
        ann.index = len(trace.ranges) + index
    found: dict[int, HostRange] = {}
    for track, items in by_track.items():
        items.sort(key=lambda r: (r.ts, -r.end))
        points = [(op.ts + op.dur / 2.0, k) for k, op in enumerate(ops) if op.host is None and op.stream == as_int(track[1])]
        found.update(innermost(items, points))
    return found
