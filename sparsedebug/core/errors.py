"""Exception types: what the user did wrong versus what we did wrong.

``UserError`` carries a message meant for the terminal (one line per problem) and
maps to exit code 2. Anything else that escapes a command is an internal bug and
keeps its traceback so it can be reported.
"""

from __future__ import annotations


class SparsedebugError(Exception):
    """Base class for every error sparsedebug raises on purpose."""


class UserError(SparsedebugError):
    """Bad input or usage: a missing file, an invalid record, an impossible option.

    The message is shown as is (no traceback) and the process exits with code 2.
    """

    exit_code = 2


class InternalError(SparsedebugError):
    """A broken invariant inside sparsedebug: a bug to report, never the user's fault."""


class UnverifiedClaim(InternalError):
    """A rendered text states what its review document does not carry (``render.memo.claims``): a bug in a renderer
    or in the document, caught before anything is published. The command exits with code 3, one line per problem."""

    exit_code = 3

    def __init__(self, where: str, problems: list[str]) -> None:
        super().__init__(f"{where}: {problems[0]}" if problems else where)
        self.where = where
        self.problems = problems
