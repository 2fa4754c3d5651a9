"""What ixtool's output may assume about the terminal, by the conventions users expect.

* Colour (:func:`color_wanted`): ``NO_COLOR`` set and not empty → none (no-color.org);
  else ``FORCE_COLOR`` set and not empty → colour even into a pipe or file
  (force-color.org); else ``TERM=dumb`` → none; else colour on a terminal only.
* A progress line redrawn in place (:func:`live_line`): only on a terminal that is not
  dumb, outside CI (``$CI``) and without ``NO_COLOR``; anything else gets plain lines.
* Every byte or an error (:func:`reliable_stdout`): a reader that leaves in the middle of
  a large write (``ixtool sweep full | head -c 10``) is a closed pipe (exit 141), never
  a silent success.

Four rules, so no terminal library: ``rich`` (installed with Typer) would add its import
(~50 ms) to every command that prints findings on a terminal.
"""

from __future__ import annotations

import io
import os
import sys
from typing import TextIO


def _set(name: str) -> bool:
    return bool(os.environ.get(name))


def color_wanted(stream: TextIO) -> bool:
    """ANSI colour on ``stream`` (see the module docstring)."""
    if _set("NO_COLOR"):
        return False
    if _set("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def live_line(stream: TextIO) -> bool:
    """May a progress line be redrawn in place on ``stream`` (``\\r`` and erase-line)?"""
    if _set("CI") or _set("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class _FullWrites(io.RawIOBase):
    """A raw writer whose ``write`` returns only once every byte is written, else raises
    (a closed pipe: BrokenPipeError).  Python's buffered stdout returns the count of a
    partial write — a pipe closed while a large write blocks — and its text layer drops
    the rest: the process then ends 0 with its output cut short."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, b: object) -> int:
        view = memoryview(b).cast("B")  # type: ignore[arg-type]
        total = len(view)
        while view:
            view = view[os.write(self._fd, view):]
        return total


def reliable_stdout() -> None:
    """Make the process's stdout write every byte or raise (see :class:`_FullWrites`);
    a stdout that is not the process's own (tests capturing it) is left alone."""
    out = sys.stdout
    if out is None or out is not sys.__stdout__ or not isinstance(out, io.TextIOWrapper):
        return
    try:
        fd = out.fileno()
        out.flush()
    except (OSError, ValueError):
        return
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_FullWrites(fd), buffer_size=1 << 16), encoding=out.encoding,
        errors=out.errors, line_buffering=out.line_buffering, write_through=out.write_through)
