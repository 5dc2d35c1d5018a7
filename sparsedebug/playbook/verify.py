"""`memo --verify`: a bundle on disk re-checked against its review document (memo.json)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sparsedebug.sources.bundle import FILES

VERIFIED_FORMATS: dict[str, str] = {"memo": "markdown"}
"""The bundle files that render the review document alone, by role, with the format each was written in."""


@dataclass(frozen=True)
class FileCheck:
    """One written file of a bundle checked against the review document beside it (a check's outcome, in words: not a
    record)."""

    file: str
    format: str
    problems: list[str]
    """Empty when the file agrees with the document (``render.memo.formats.disagreements``)."""


@dataclass(frozen=True)
class Verification:
    """Every file of a bundle that renders its review document, checked against it."""

    bundle: str
    document: str
    files: list[FileCheck]

    @property
    def verified(self) -> bool:
        """True when every checked file agrees with the document."""
        return all(not f.problems for f in self.files)


def verify_bundle(root: Path) -> Verification:
    """Read the bundle at ``root`` (a ``UserError`` when it cannot be read: exit 2) and check each file that renders
    its review document (:data:`VERIFIED_FORMATS`) against memo.json: numbers, wording and every line."""
    from sparsedebug.core.errors import UserError
    from sparsedebug.render.memo.formats import disagreements
    from sparsedebug.signoff.memo import require_current
    from sparsedebug.sources.detect import load_bundle

    loaded = load_bundle(root)
    require_current(loaded)
    assert loaded.memo is not None
    checks = []
    for role, name in VERIFIED_FORMATS.items():
        path = root / FILES[role]
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
        checks.append(FileCheck(file=FILES[role], format=name, problems=disagreements(loaded.memo, name, text)))
    return Verification(bundle=str(root), document=FILES["memo_model"], files=checks)
