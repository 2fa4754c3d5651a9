"""One exception hierarchy for every error ixtool reports without a traceback.

Findings are *results* (exit 1); these exceptions are for input that cannot be
judged at all or for misuse (exit 2).  The CLI catches :class:`IxtoolError`,
prints ``ixtool: error: <message>`` (plus the hint) and exits with
``exit_code``.  Anything else is a bug and is reported as an internal error.
"""

from __future__ import annotations


class IxtoolError(Exception):
    """Base class of every user-facing ixtool error."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(IxtoolError):
    """Bad command-line usage: conflicting or missing options."""


class InputError(IxtoolError):
    """A file could not be read or is unusable (missing, unreadable, too large)."""


class YamlError(InputError):
    """YAML that cannot be loaded: syntax error, duplicate key, limits exceeded."""

    def __init__(
        self,
        message: str,
        *,
        source: str = "<input>",
        line: int | None = None,
        column: int | None = None,
        hint: str | None = None,
        kind: str = "syntax",
    ) -> None:
        where = source if line is None else f"{source}:{line}:{column or 1}"
        super().__init__(f"{where}: {message}", hint=hint)
        self.detail = message
        self.source = source
        self.line = line
        self.column = column
        self.kind = kind  # syntax | duplicate-key | limit | encoding


class LimitExceeded(YamlError):
    """Input over one of ixtool's documented resource limits."""


class GitError(IxtoolError):
    """A git operation failed: unknown ref, not a repository, missing history."""


class ShallowCloneError(GitError):
    """History needed for the operation is missing because the clone is shallow."""


class ForgeError(IxtoolError):
    """The GitHub API failed or refused (network, rate limit, permissions)."""


class ConflictError(IxtoolError):
    """A merge or resolution cannot be performed safely; nothing was written."""

    exit_code = 1
