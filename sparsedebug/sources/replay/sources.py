"""Which graph source holds a workload: the one place the replay picks between a declared graph and a checkpoint.

The checkpoint source says whether it holds the workload
(:func:`sparsedebug.sources.replay.checkpoint.source.holds`); everything else is a
declared graph. Callers get a :class:`~sparsedebug.sources.replay.protocol.GraphSource`
and talk to it only through the Protocol.
"""

from __future__ import annotations

from pathlib import Path

from sparsedebug.sources.replay.checkpoint.source import CheckpointSource, holds
from sparsedebug.sources.replay.protocol import GraphSource
from sparsedebug.sources.replay.synthetic.source import SyntheticSource
from sparsedebug.sources.workload.schema import Workload, absolute_paths


def graph_source(workload: Workload, base_dir: Path | None = None) -> GraphSource:
    """The graph source of ``workload``; ``base_dir`` (the workload file's folder) resolves its relative paths."""
    if holds(workload):
        return CheckpointSource(absolute_paths(workload, base_dir))
    return SyntheticSource(workload, base_dir)
