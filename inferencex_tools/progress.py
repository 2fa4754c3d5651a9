"""The progress callback services accept (they never print): ``progress(done, total,
what)`` as work advances, a phase at a time — ``progress(0, total, what)`` when a phase
starts (its total fixed then), then as its items finish; a new ``what`` is a new phase.
The CLI passes ``cli.progress.ProgressLine`` (it measures rates); tests and library
callers pass nothing (:func:`no_progress`)."""

from __future__ import annotations

from collections.abc import Callable

ProgressFn = Callable[[int, "int | None", str], None]


def no_progress(done: int, total: int | None = None, what: str = "") -> None:
    """The default callback: ignore progress."""
