"""The progress of long work on stderr, in one of two forms:

* on a terminal: one line, ``label: done/total what, rate/s, ~ETA left``, redrawn in
  place (at most every 0.1 s) and cleared when the work ends;
* in a log (stderr is not a terminal, ``TERM=dumb``, ``$CI`` or ``$NO_COLOR`` is set and
  not empty: :func:`inferencex_tools.cli.term.live_line`): plain lines,
  the first after :attr:`ProgressLine.log_first` seconds (short commands print none),
  then at most one every :attr:`ProgressLine.log_every` seconds, so a multi-minute
  ``policy check`` in a CI log says how far it is without flooding it.

``--quiet`` silences both.  Services never print: they take a
:data:`inferencex_tools.progress.ProgressFn` callback and call it as work advances, a
phase at a time (``progress(0, total, what)`` when a phase starts, then each item); the
command hands them a :class:`ProgressLine`, which measures the rate and the time left
from the start of the phase (a new ``what`` is a new phase with its own total)::

    with ProgressLine("policy check") as progress:
        result = run_check(req, progress=progress)
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from inferencex_tools.cli.common import SETTINGS

_MIN_INTERVAL = 0.1  # seconds between two redraws on a terminal
_RATE_AFTER = 0.5  # seconds of a phase before its rate means anything


def progress_mode(stream: TextIO | None = None) -> str | None:
    """``"line"`` (a terminal, :func:`~inferencex_tools.cli.term.live_line`), ``"log"``
    (anything else) or None (``--quiet``) for progress on ``stream`` (default: stderr)."""
    from inferencex_tools.cli.term import live_line

    if SETTINGS.quiet:
        return None
    return "line" if live_line(stream or sys.stderr) else "log"


def _duration(seconds: float) -> str:
    s = int(seconds + 0.5)
    if s < 1:
        return "<1s"
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class ProgressLine:
    """A callable ``(done, total, what)`` that shows progress on stderr (see the module
    docstring).  Use it as a context manager: leaving it clears a terminal line."""

    log_first = 10.0  # seconds before the first log line
    log_every = 30.0  # seconds between two log lines

    def __init__(self, label: str, *, stream: TextIO | None = None,
                 mode: str | None = "auto",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.mode = progress_mode(self.stream) if mode == "auto" else mode
        self.clock = clock
        self._started = clock()
        self._last = float("-inf")  # the last line drawn or logged
        self._drawn = False
        self._phase: str | None = None
        self._phase_start = self._started
        self._state: tuple[int, int | None] = (0, None)  # the phase's last (done, total)
        self._lock = threading.Lock()
        self._stop: threading.Event | None = None
        self._beats: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return self.mode is not None

    def __call__(self, done: int, total: int | None = None, what: str = "") -> None:
        if self.mode is None:
            return
        with self._lock:
            now = self.clock()
            if what != self._phase:  # a new phase: its own total, rate and time left
                self._phase, self._phase_start = what, now
            self._state = (done, total)
            if self.mode == "log":
                self._start_beats()
                if now - self._started < self.log_first or now - self._last < self.log_every:
                    return
            elif not (total is not None and done >= total) and now - self._last < _MIN_INTERVAL:
                return
            self._last = now
            self._show(self._text(done, total, what, now - self._phase_start))

    def beat(self) -> None:
        """In a log, a line for a phase that has gone quiet (one long step: a big file,
        a whole gate stage): at most one per :attr:`log_every`, never before
        :attr:`log_first`, so a log shows the command is alive."""
        with self._lock:
            now = self.clock()
            if self.mode != "log" or self._phase is None or \
                    now - self._started < self.log_first or now - self._last < self.log_every:
                return
            self._last = now
            done, total = self._state
            spent = now - self._phase_start
            self._show(self._text(done, total, self._phase, spent)
                       + f" ({_duration(spent)} in this step)")

    def _start_beats(self) -> None:
        """A daemon thread calling :meth:`beat` every second (a real clock only)."""
        if self._beats is not None or self.clock is not time.monotonic:
            return
        stop = self._stop = threading.Event()

        def run() -> None:
            while not stop.wait(1.0):
                self.beat()

        self._beats = threading.Thread(target=run, name="ixtool-progress", daemon=True)
        self._beats.start()

    def _text(self, done: int, total: int | None, what: str, spent: float) -> str:
        if total is None and done == 0:  # a step without a count: what it is doing
            return f"{self.label}: {what}" if what else self.label
        count = f"{done}/{total}" if total is not None else str(done)
        line = f"{self.label}: {count}" + (f" {what}" if what else "")
        if done > 0 and spent >= _RATE_AFTER:
            rate = done / spent
            line += f", {rate:.1f}/s"
            if total is not None and total > done:
                line += f", ~{_duration((total - done) / rate)} left"
        return line

    def _show(self, line: str) -> None:
        if self.mode == "log":
            self.stream.write(line + "\n")
        else:
            width = _width(self.stream)
            if len(line) > width - 1:
                line = line[:max(0, width - 2)] + "…"
            self.stream.write("\r\x1b[2K" + line)
            self._drawn = True
        self.stream.flush()

    def close(self) -> None:
        """Stop the log's beats; clear the terminal line (the result is printed next)."""
        if self._stop is not None and self._beats is not None:
            self._stop.set()
            self._beats.join()
            self._beats = self._stop = None
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
