"""One exception hierarchy for every error ixtool reports without a traceback.

Findings are *results* (exit 1); these exceptions are for input that cannot be
judged at all or for misuse (exit 2).  The CLI catches :class:`IxtoolError`,
prints ``ixtool: error: <message>`` (plus the hint) and exits with
``exit_code``.  Anything else is a bug and is reported as an internal error.
"""

from __future__ import annotations

from collections.abc import Iterable


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
    """A merge or resolution cannot be performed safely; nothing was written.  Like every
    error the CLI prints it with a hint and exits 2 (findings exit 1)."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint or (
            "nothing was written; fix what the message names, or resolve by hand, then run "
            "the command again"))


def close_names(name: str, candidates: Iterable[str], *, n: int = 3) -> list[str]:
    """Up to ``n`` of ``candidates`` that look like ``name`` (best first): prefix and
    substring matches, then difflib's similar spellings."""
    import difflib

    pool = sorted(set(candidates))
    low = name.lower().lstrip("-")
    bare = {c.lower().lstrip("-"): c for c in pool}  # options compare without dashes
    out = [c for b, c in bare.items() if low and b.startswith(low)][:n]
    out += [c for b, c in bare.items() if len(low) > 2 and low in b and c not in out]
    out += [bare[b] for b in difflib.get_close_matches(low, list(bare), n=n, cutoff=0.7)
            if bare[b] not in out]
    return out[:n]


def nearest(name: str, candidates: Iterable[str], *, n: int = 3) -> list[str]:
    """The ``n`` candidates most similar to ``name`` however unlike it they are (difflib's
    ratio, case-insensitive; ties by name): what a hint names when nothing is close."""
    import difflib

    low = name.lower().lstrip("-")
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(low)
    scored = []
    for c in sorted(set(candidates)):
        matcher.set_seq1(c.lower().lstrip("-"))
        scored.append((-matcher.ratio(), c))
    return [c for _, c in sorted(scored)[:n]]


def did_you_mean(name: str, candidates: Iterable[str], *, what: str = "name",
                 listing: str | None = None, n: int = 3) -> str:
    """A short hint for an unknown ``name``: ``did you mean 'a', 'b'?`` (never the whole
    list), else how many ``what``s exist and where to list them (``listing``)."""
    pool = sorted(set(candidates))
    close = close_names(name, pool, n=n)
    if close:
        hint = "did you mean " + ", ".join(repr(c) for c in close) + "?"
    elif not pool:
        return f"there is no {what} to choose from" + (f"; {listing}" if listing else "")
    elif len(pool) <= 15:
        return f"{what}s: " + ", ".join(pool)
    else:
        return (f"no {what} looks like {name!r}; the closest of the {len(pool)}: "
                + ", ".join(repr(c) for c in nearest(name, pool, n=n))
                + (f"; {listing}" if listing else ""))
    return hint + (f" ({listing})" if listing else "")


def key_hint(patterns: Iterable[str], keys: Iterable[str]) -> str:
    """did-you-mean for config keys or globs that matched nothing (a glob is compared
    without its ``*``/``?``); ``ixtool sweep explain KEY`` shows what a key expands to."""
    pool = sorted(set(keys))
    close: list[str] = []
    for pat in patterns:
        close += [c for c in close_names(pat.replace("*", "").replace("?", ""), pool)
                  if c not in close]
    if close:
        return "did you mean " + ", ".join(repr(c) for c in close[:3]) + "?"
    if not pool:
        return "there are no config keys here (the top-level names of configs/*-master.yaml)"
    bare = " ".join(p.replace("*", "").replace("?", "") for p in patterns)
    shown = ", ".join(repr(c) for c in nearest(bare, pool))
    return (f"no config key looks like it; the closest of the {len(pool)} (the top-level "
            f"names of configs/*-master.yaml): {shown}")
