"""Release versions as comparable tuples: ``0.19.1``, ``2.11.0+cu130``, ``v0.19.1+rhaiv.1``, ``10.3.0.26``.

Only the release numbers count (a leading ``v``, a local ``+...`` part and a pre-release or dev suffix
are dropped), padded with zeros, so ``2.11`` equals ``2.11.0``. That is what a stack fact's version
bound needs: ``since`` inclusive, ``before`` exclusive.
"""

from __future__ import annotations

import re

from sparsedebug.core.errors import UserError

_RELEASE = re.compile(r"^v?(\d+(?:\.\d+)*)")


def release(version: str) -> tuple[int, ...]:
    """The release numbers of ``version``; ``UserError`` when it does not start with one."""
    match = _RELEASE.match(version.strip())
    if match is None:
        raise UserError(f"version {version!r}: expected release numbers such as 0.19.1 or 2.11.0+cu130")
    parts = tuple(int(p) for p in match.group(1).split("."))
    while len(parts) > 1 and parts[-1] == 0:
        parts = parts[:-1]
    return parts


def in_range(version: str, since: str | None, before: str | None) -> bool:
    """Whether ``since <= version < before`` (an absent bound is open)."""
    v = release(version)
    if since is not None and v < release(since):
        return False
    return not (before is not None and v >= release(before))


def same_release(a: str, b: str) -> bool:
    """Whether two versions name the same release (``2.11`` and ``2.11.0+cu130`` do)."""
    return release(a) == release(b)
