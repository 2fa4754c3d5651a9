"""Processes of the policy tracing sandbox (``policy/trace.py``): the one place it starts
them.  No shell is involved; every command is an argv list.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def succeeds(cmd: Sequence[str], *, env: Mapping[str, str], timeout: float) -> bool:
    """Does ``cmd`` run and exit 0 (output discarded)?"""
    try:
        r = subprocess.run(list(cmd), capture_output=True, timeout=timeout, check=False,
                           env=dict(env))
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


@dataclass
class Child:
    """A started process (its own session) with stdout/stderr on pipes, or discarded."""

    proc: Any  # subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return int(self.proc.pid)

    @property
    def returncode(self) -> int | None:
        rc = self.proc.returncode
        return None if rc is None else int(rc)

    def stdout_fd(self) -> int:
        return int(self.proc.stdout.fileno())

    def stderr_fd(self) -> int:
        return int(self.proc.stderr.fileno())

    def poll(self) -> int | None:
        rc = self.proc.poll()
        return None if rc is None else int(rc)

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            return int(self.proc.wait(timeout=timeout))
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        self.proc.kill()

    def close_pipes(self) -> None:
        for p in (self.proc.stdout, self.proc.stderr):
            if p is not None:
                p.close()


def spawn(cmd: Sequence[str], *, env: Mapping[str, str], cwd: Path | None = None,
          pass_fds: Sequence[int] = (), capture: bool = True) -> Child:
    """Start ``cmd`` in a new session; stdin is /dev/null; stdout/stderr on pipes
    (``capture``) or discarded."""
    out = subprocess.PIPE if capture else subprocess.DEVNULL
    proc = subprocess.Popen(list(cmd), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                            stdout=out, stderr=out, pass_fds=tuple(pass_fds),
                            start_new_session=True)
    return Child(proc)
