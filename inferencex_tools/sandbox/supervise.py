"""Bounded traces: ixtool's supervisor of one trace as a whole.

Every :data:`SAMPLE` seconds it finds the trace's processes (the tree below the
sandbox's first process: the trace server's waiter, bubblewrap or the subreaper), sums
what they hold in memory (resident anonymous and shared pages, memfds nobody maps) and
counts them; it counts the trace's output as ixtool reads it.  The first bound of
:class:`Limits` passed ends the trace (the caller kills it) and is the trace's
``stopped_by``.  cgroup v2 would bound memory in the kernel, exactly; it cannot be
delegated on every runner, so ixtool does not use it.  Linux ``/proc`` only.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol


class Counted(Protocol):
    """An output pipe's tail: how many bytes went through it."""

    total: int


@dataclass(frozen=True)
class Limits:
    """Bounds on one trace as a whole (all its processes at once), watched by ixtool
    every :data:`SAMPLE` seconds; past one the trace is killed and
    :attr:`TraceResult.stopped_by` says which.  (Per process the kernel's limits apply
    as well: 2 GiB of address space, 64 MiB per file, …)"""

    # (the real tree's traces: at most 8 MiB and 7 processes at once)
    memory: int = 512 << 20  # bytes: resident anonymous + shared memory, unmapped memfds
    processes: int = 128  # at once
    output: int = 64 << 20  # bytes on stdout, stderr and the xtrace stream together


SAMPLE = 0.1  # seconds between two looks at a trace's processes


def children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (every thread's children)."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                out += [int(p) for p in fh.read().split()]
        except (OSError, ValueError):
            continue
    return out


def tree(roots: Iterable[int]) -> list[int]:
    """``roots`` and every process below them."""
    out: list[int] = []
    todo = list(roots)
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children(pid)
    return out


_RSS = re.compile(rb"^(?:RssAnon|RssShmem):\s+(\d+) kB", re.M)


def memory(pid: int, seen: set[tuple[int, int]]) -> int:
    """What ``pid`` holds in memory: its resident anonymous and shared pages, and the
    memfds it has open (once each: ``seen``), which no RSS shows when nothing maps them."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            total = sum(int(kb) for kb in _RSS.findall(fh.read())) * 1024
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return 0
    for fd in fds:
        path = f"/proc/{pid}/fd/{fd}"
        with contextlib.suppress(OSError):
            if os.readlink(path).startswith("/memfd:"):
                st = os.stat(path)
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
    return total


class Supervisor:
    """The supervisor of one trace: its processes (below ``roots()``) counted and their
    memory summed every :data:`SAMPLE` seconds, its output counted as it is read; the
    first bound passed is :attr:`over` (``"<kind>: …"``), and stays."""

    def __init__(self, roots: Callable[[], list[int]], limits: Limits,
                 tails: Iterable[Counted]) -> None:
        self.roots, self.limits, self.tails = roots, limits, list(tails)
        self.kill: Callable[[], None] = lambda: None  # how to end the trace (served mode)
        self.over: str | None = None
        self.peak_memory = self.peak_processes = 0
        self._next = 0.0

    def check(self) -> str | None:
        """A new look when one is due; the bound passed, or None."""
        now = time.monotonic()
        if self.over is not None or now < self._next:
            return self.over
        self._next = now + SAMPLE
        lim = self.limits
        if self._output():
            return self.over
        pids = tree(self.roots())
        seen: set[tuple[int, int]] = set()
        used = sum(memory(p, seen) for p in pids)
        self.peak_memory = max(self.peak_memory, used)
        self.peak_processes = max(self.peak_processes, len(pids))
        if len(pids) > lim.processes:
            self.over = f"processes: more than {lim.processes} at once"
        elif used > lim.memory:
            self.over = (f"memory: its processes held {used >> 20} MiB together, over the "
                         f"trace's {lim.memory >> 20} MiB")
        return self.over

    def _output(self) -> bool:
        if self.over is None and sum(t.total for t in self.tails) > self.limits.output:
            self.over = f"output: more than {self.limits.output >> 20} MiB printed"
        return self.over is not None

    def final(self) -> str | None:
        """The bound the trace passed, its output counted to the end (after it ended)."""
        self._output()
        return self.over


def grandchildren(pid: int) -> list[int]:
    """The children of ``pid``'s children (namespace mode: the trace server's waiters'
    children, each trace's first process)."""
    return [g for c in children(pid) for g in children(c)]


def kill_children(parent: int) -> None:
    """SIGKILL every child of ``parent``, through a pidfd checked to be that child still
    (a pid reused in between is never signalled)."""
    for pid in children(parent):
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            continue
        try:
            if pid in children(parent):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
        finally:
            os.close(fd)
