"""The one progress line of the CLI: long work shows ``label: done/total what`` on
stderr, rewritten in place, only when stderr is a terminal and neither ``$CI``,
``$NO_COLOR`` nor ``--quiet`` asks for silence.

Services never print: they take a :data:`inferencex_tools.progress.ProgressFn`
callback and call it as work advances; the command hands them a :class:`ProgressLine`::

    with ProgressLine("policy check") as progress:
        result = run_check(req, progress=progress)
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

from inferencex_tools.cli.common import SETTINGS

_MIN_INTERVAL = 0.1  # seconds between two redraws


def progress_enabled(stream: TextIO | None = None) -> bool:
    """True when progress lines may be drawn on ``stream`` (default: stderr)."""
    stream = stream or sys.stderr
    if SETTINGS.quiet or os.environ.get("CI") or "NO_COLOR" in os.environ:
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class ProgressLine:
    """A callable ``(done, total, what)`` that redraws one status line on a terminal;
    does nothing elsewhere.  Use it as a context manager: leaving it clears the line."""

    def __init__(self, label: str, *, stream: TextIO | None = None,
                 enabled: bool | None = None) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = progress_enabled(self.stream) if enabled is None else enabled
        self._last = 0.0
        self._drawn = False

    def __call__(self, done: int, total: int | None = None, what: str = "") -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        final = total is not None and done >= total
        if not final and now - self._last < _MIN_INTERVAL:
            return
        self._last = now
        count = f"{done}/{total}" if total is not None else str(done)
        line = f"{self.label}: {count}" + (f" {what}" if what else "")
        width = _width(self.stream)
        if len(line) > width - 1:
            line = line[:max(0, width - 2)] + "…"
        self.stream.write("\r\x1b[2K" + line)
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Clear the line (the result is printed next)."""
        if self._drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._drawn = False

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _width(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 80
