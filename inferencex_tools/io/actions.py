"""The GitHub Actions adapter: the one place that reads the runner's environment and
writes the runner's files.

Reading.  The CLI takes one :class:`ActionsEnv` snapshot (:meth:`ActionsEnv.from_environ`)
and hands it to the services; core packages never read ``os.environ`` themselves.

=====================  ==============================================================
``GITHUB_EVENT_NAME``  :attr:`ActionsEnv.event_name`
``GITHUB_EVENT_PATH``  :attr:`ActionsEnv.event_path` (payload: :meth:`ActionsEnv.event`,
                       :meth:`ActionsEnv.pull_request`)
``GITHUB_REPOSITORY``  :attr:`ActionsEnv.repository` (the base repository, OWNER/NAME)
``GITHUB_OUTPUT``      :attr:`ActionsEnv.output`
``GITHUB_STEP_SUMMARY`` :attr:`ActionsEnv.summary`
``IXTOOL_PR``          :attr:`ActionsEnv.pr` (raw; the merge driver's PR number)
=====================  ==============================================================

Writing.  ``$GITHUB_OUTPUT`` text has one formatter, :func:`format_outputs` (``name=value``
for a one-line value, a ``name<<DELIMITER`` heredoc otherwise, the delimiter random and
checked not to occur in the value); :func:`parse_outputs` reads it back as the runner does.
One failure policy for both files:

* ``$GITHUB_OUTPUT`` (:func:`write_outputs`): a failed write is an error
  (:class:`~inferencex_tools.errors.InputError`, exit 2) — later steps would read
  missing outputs and do the wrong thing silently;
* ``$GITHUB_STEP_SUMMARY`` (:func:`write_summary`): a failed write returns a warning
  message for the CLI to print — the summary is for people, the step still succeeds.

Both files are appended to atomically (:func:`~inferencex_tools.io.files.atomic_append`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferencex_tools.errors import InputError, UsageError

PR_ENV = "IXTOOL_PR"
MAX_EVENT_BYTES = 25 * 1024 * 1024
PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")


@dataclass(frozen=True)
class ActionsEnv:
    """What the GitHub Actions runner (and ``$IXTOOL_PR``) told this process.

    Empty variables count as unset.  The default instance is "not under Actions".
    """

    event_name: str | None = None
    event_path: Path | None = None
    repository: str | None = None
    output: Path | None = None
    summary: Path | None = None
    pr: str | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> ActionsEnv:
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            value = env.get(name, "").strip() if name == PR_ENV else env.get(name, "")
            return value or None

        def path(name: str) -> Path | None:
            value = get(name)
            return Path(value) if value else None

        return cls(event_name=get("GITHUB_EVENT_NAME"), event_path=path("GITHUB_EVENT_PATH"),
                   repository=get("GITHUB_REPOSITORY"), output=path("GITHUB_OUTPUT"),
                   summary=path("GITHUB_STEP_SUMMARY"), pr=get(PR_ENV))

    def event(self) -> Any:
        """The event payload (any JSON value), or None without ``$GITHUB_EVENT_PATH``."""
        if self.event_path is None:
            return None
        from inferencex_tools.io.files import read_json

        try:
            return read_json(self.event_path, "event payload", max_bytes=MAX_EVENT_BYTES)
        except InputError as exc:
            raise InputError(f"cannot read $GITHUB_EVENT_PATH ({self.event_path}): "
                             f"{exc.message}",
                             hint="unset GITHUB_EVENT_PATH outside GitHub Actions, or point it "
                             "at the webhook payload") from None

    def pull_request(self) -> dict[str, Any] | None:
        """The ``pull_request`` object of a pull_request(_target) event, else None."""
        if self.event_name not in PULL_REQUEST_EVENTS:
            return None
        data = self.event()
        pr = data.get("pull_request") if isinstance(data, dict) else None
        return pr if isinstance(pr, dict) else None

    def require_output(self, flag: str) -> Path:
        """``$GITHUB_OUTPUT`` for an option that asked for it (UsageError when unset)."""
        if self.output is None:
            raise UsageError(f"{flag} needs $GITHUB_OUTPUT (set by GitHub Actions)",
                             hint=f"run inside a GitHub Actions step, or drop {flag}")
        return self.output


# ----------------------------------------------------------------------- $GITHUB_OUTPUT

Pairs = Iterable[tuple[str, str]] | Mapping[str, str]


def _items(pairs: Pairs) -> Iterable[tuple[str, str]]:
    return pairs.items() if isinstance(pairs, Mapping) else pairs


def format_outputs(pairs: Pairs, *, delimiter: str | None = None) -> str:
    """``$GITHUB_OUTPUT`` text: ``name=value``, or a heredoc for a multi-line value.

    The heredoc delimiter is ``ixtool_<random>`` and regenerated until it occurs in no
    line of the value; an explicit ``delimiter`` (tests) that occurs raises ValueError.
    """
    import secrets  # only where a delimiter is drawn (start-up time)

    out: list[str] = []
    for name, value in _items(pairs):
        if "\n" not in value and "\r" not in value:
            out.append(f"{name}={value}\n")
            continue
        delim = delimiter or f"ixtool_{secrets.token_hex(16)}"
        while delim in value:
            if delimiter is not None:
                raise ValueError("output delimiter occurs in a value")
            delim = f"ixtool_{secrets.token_hex(16)}"
        out.append(f"{name}<<{delim}\n{value}\n{delim}\n")
    return "".join(out)


def parse_outputs(text: str) -> dict[str, str]:
    """Read ``$GITHUB_OUTPUT`` text (both ``name=value`` and heredoc forms).

    Strict, like the runner: a non-empty line that is neither form, or a heredoc
    without its closing delimiter, raises ValueError.
    """
    out: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line:
            i += 1
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            try:
                j = lines.index(delim, i + 1)
            except ValueError:
                raise ValueError(f"heredoc {name!r}: no closing {delim!r}") from None
            out[name] = "\n".join(lines[i + 1:j])
            i = j + 1
            continue
        if "=" not in line:
            raise ValueError(f"not a GITHUB_OUTPUT line: {line!r}")
        k, v = line.split("=", 1)
        out[k] = v
        i += 1
    return out


def _why(exc: OSError) -> str:
    return exc.message if isinstance(exc, InputError) else str(exc.strerror or exc)


def write_outputs(path: Path, pairs: Pairs) -> None:
    """Append ``pairs`` to ``$GITHUB_OUTPUT``; InputError when that fails."""
    from inferencex_tools.io.files import atomic_append

    try:
        atomic_append(path, format_outputs(pairs).encode("utf-8"))
    except OSError as exc:
        raise InputError(f"cannot write $GITHUB_OUTPUT ({path}): {_why(exc)}",
                         hint="GitHub Actions sets $GITHUB_OUTPUT to a writable file; "
                         "check the variable") from None


# ------------------------------------------------------------------ $GITHUB_STEP_SUMMARY

def write_summary(path: Path, markdown: str) -> str | None:
    """Append ``markdown`` to ``$GITHUB_STEP_SUMMARY``; a warning message when that fails."""
    from inferencex_tools.io.files import atomic_append

    try:
        atomic_append(path, markdown.encode("utf-8"))
    except OSError as exc:
        return f"cannot write $GITHUB_STEP_SUMMARY ({path}): {_why(exc)}"
    return None
