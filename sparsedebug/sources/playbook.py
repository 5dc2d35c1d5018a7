"""Load a playbook file (``playbooks/*.yaml``, or the embedded default) into its records.

``load_playbook`` validates the YAML into :class:`~sparsedebug.records.playbook.Playbook` and refuses
anything inconsistent (unknown owner, missing decision, steps out of order) with ``FILE: field: message``.
"""

from __future__ import annotations

from pathlib import Path

from sparsedebug.core.errors import UserError
from sparsedebug.core.io import load_data, validate
from sparsedebug.core.resources import data_dirs
from sparsedebug.records.playbook import DEFAULT_PLAYBOOK, Playbook


def default_playbook_path() -> Path:
    """The embedded structured-sparsity playbook (installed wheel or source checkout)."""
    for directory in data_dirs("playbooks"):
        candidate = directory / DEFAULT_PLAYBOOK
        if candidate.is_file():
            return candidate
    searched = ", ".join(str(d) for d in data_dirs("playbooks"))
    raise UserError(f"embedded playbook {DEFAULT_PLAYBOOK} not found (searched {searched}); reinstall sparsedebug")


def load_playbook(path: Path | None = None) -> Playbook:
    """Load and validate a playbook YAML; ``None`` loads the embedded default."""
    source = default_playbook_path() if path is None else path
    return validate(Playbook, load_data(source), str(source))
