"""Building a bundle directory: a sibling work directory written once per file, the swap into place, stale leftovers.

What a bundle holds, and reading it back, is :mod:`sparsedebug.sources.bundle`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

from sparsedebug.core.errors import InternalError, UserError
from sparsedebug.core.io import check_output_directory, existing_kind
from sparsedebug.core.signals import signals_deferred
from sparsedebug.records.notes import Note, note
from sparsedebug.sources.bundle import FILES, MANIFEST

if TYPE_CHECKING:
    from sparsedebug.records.bundle import Bundle
    from sparsedebug.records.memo import Memo
    from sparsedebug.records.playbook import Playbook
    from sparsedebug.sources.bundle import LoadedBundle

M = TypeVar("M", bound=BaseModel)

# Infix of the sibling directory a bundle is built in: ``.NAME.partial-PID``.
PARTIAL = "partial"
# Infix of the sibling the previous bundle is moved to while the new one takes its place: ``.NAME.old-PID``.
OLD = "old"


def work_dir(out_dir: Path, infix: str, pid: int | None = None) -> Path:
    """The sibling ``.NAME.INFIX-PID`` of ``out_dir`` used while a bundle is built or swapped."""
    return out_dir.parent / f".{out_dir.name}.{infix}-{os.getpid() if pid is None else pid}"


def check_out_dir(out_dir: Path, *, force: bool = False) -> None:
    """Refuse an output directory that is a file, holds something other than a bundle, or cannot be written.

    An existing bundle is replaced only with ``force``; without it the walk stops
    before doing anything, naming the bundle it would have replaced.
    """
    kind = existing_kind(out_dir, f"{out_dir} (-o)")
    if kind is not None:
        if kind != "directory":
            raise UserError(f"{out_dir}: exists and is a {kind}, not a directory; choose another -o")
        if any(out_dir.iterdir()):
            if not (out_dir / MANIFEST).is_file():
                raise UserError(f"{out_dir}: not empty and not a sparsedebug bundle; choose another -o")
            if not force:
                raise UserError(f"{out_dir}: holds a bundle already; pass --force to replace it, or choose another -o")
    check_output_directory(out_dir.parent if str(out_dir.parent) else Path("."), str(out_dir))


def _pid_running(pid: int) -> bool:
    """Whether ``pid`` is a live process that looks like sparsedebug (a reused pid of another program is not)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc: assume it is ours
    return b"sparsedebug" in cmdline


def clear_stale(out_dir: Path) -> list[Note]:
    """Clean up what a killed walk left beside ``out_dir``; return one note per thing done.

    ``.NAME.partial-PID`` (a bundle being built) is removed once PID is gone; one
    whose process still runs is another walk writing the same bundle, a
    ``UserError``. ``.NAME.old-PID`` (the previous bundle, moved aside during the
    swap) is put back when ``out_dir`` is missing, else removed.
    """
    parent = out_dir.parent if str(out_dir.parent) else Path(".")
    if not parent.is_dir():
        return []
    notes: list[Note] = []
    prefix = f".{out_dir.name}."
    for entry in sorted(parent.iterdir()):
        if not entry.name.startswith(prefix) or not entry.is_dir():
            continue
        infix, _, pid_text = entry.name[len(prefix):].rpartition("-")
        if infix not in (PARTIAL, OLD) or not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if _pid_running(pid):
            raise UserError(
                f"{out_dir}: another playbook run (pid {pid}) is writing this bundle ({entry.name} exists); "
                "wait for it or choose another -o"
            )
        with signals_deferred():
            if infix == OLD and not out_dir.exists():
                entry.rename(out_dir)
                notes.append(note("playbook.restored_previous", bundle=str(out_dir), entry=entry.name, pid=pid))
            else:
                shutil.rmtree(entry, ignore_errors=True)
                notes.append(note("playbook.removed_stale", entry=entry.name, partial=infix == PARTIAL, pid=pid))
    return notes


def swap_into_place(tmp: Path, out_dir: Path) -> None:
    """Replace ``out_dir`` (an old bundle or nothing) with the finished ``tmp`` bundle.

    Signals are held off for the two renames and the removal of the old bundle, so a
    SIGTERM at any moment leaves either the previous bundle or the new one, and
    nothing beside it.
    """
    with signals_deferred():
        old = None
        if out_dir.exists():
            old = work_dir(out_dir, OLD)
            out_dir.rename(old)
        tmp.rename(out_dir)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def discard(tmp: Path) -> None:
    """Remove a partial bundle, with signals held off so a second signal cannot cut the cleanup short."""
    with signals_deferred():
        shutil.rmtree(tmp, ignore_errors=True)


class BundleWriter:
    """The files of a bundle being built in ``tmp``, each written once: what was written (role -> file name, in order),
    each file's sha256, and every record as the bundle holds it (its JSON parsed back, so what the walk decides and
    renders on is what ``sparsedebug memo DIR`` reads later)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.files: dict[str, str] = {}
        self.digests: dict[str, str] = {}
        self.records: dict[str, BaseModel] = {}

    def text(self, role: str, text: str) -> Path:
        """Write ``text`` as the bundle file of ``role``; a second write of one file is an internal error."""
        from sparsedebug.core.io import atomic_write_text

        if role in self.files:
            raise InternalError(f"bundle file {FILES[role]} written twice in one walk")
        path = self.tmp / FILES[role]
        atomic_write_text(path, text)
        self.files[role] = FILES[role]
        self.digests[role] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return path

    def record(self, role: str, record: M) -> M:
        """Write one record under its fixed file name; return it as the bundle holds it."""
        from sparsedebug.core.io import dump_text, parse_data, validate

        path = self.tmp / FILES[role]
        text = dump_text(record, path)
        self.text(role, text)
        stored = validate(type(record), parse_data(text, path), str(path))
        self.records[role] = stored
        return stored

    def manifest(self, manifest: Bundle) -> None:
        """Write the manifest, last: it lists the files written, each once (an internal error otherwise)."""
        from sparsedebug.core.io import save_record

        if set(manifest.files.items()) != set(self.files.items()):
            raise InternalError(f"bundle manifest lists {sorted(manifest.files)}, the walk wrote {sorted(self.files)}")
        save_record(manifest, self.tmp / MANIFEST)

    def loaded(self, root: Path, manifest: Bundle, memo: Memo | None = None) -> LoadedBundle:
        """The bundle as ``load_bundle(root)`` would read it once moved to ``root``, built from what was written
        (``memo``: the review document to hold, else the one written)."""
        from sparsedebug.records.loaded import LoadedBundle

        fields = {ROLE_FIELDS.get(role, role): record for role, record in self.records.items()}
        held = {"fingerprint": None, "fixed": None, **fields, **({"memo": memo} if memo is not None else {})}
        return LoadedBundle.model_validate({"root": root, "manifest": manifest, **held})


# Bundle roles whose record ``LoadedBundle`` holds under another name.
ROLE_FIELDS = {"memo_model": "memo"}


def write_rendered(out: BundleWriter, bundle: LoadedBundle, book: Playbook) -> None:
    """report.md, memo.md and report.html of a bundle being built, rendered from its review document (``bundle.memo``)."""
    from sparsedebug.render.document import review
    from sparsedebug.render.html.bundle import render_bundle_html
    from sparsedebug.render.markdown.memo import render_full_report
    from sparsedebug.render.memo.formats import render_verified

    out.text("report", render_full_report(bundle, book))
    out.text("memo", render_verified(review(bundle), "markdown", FILES["memo"]))
    out.text("html", render_bundle_html(bundle, book))
