"""Processes of the tracing sandbox (``sandbox/trace.py``): the one place it starts
them.  No shell is involved; every command is an argv list.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferencex_tools.errors import IxtoolError


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


# ----------------------------------------------------------------- isolation: which, or none

class SandboxUnavailable(IxtoolError):
    """No isolation for tracing untrusted recipes here, and unsandboxed runs were not
    allowed (exit 2: fail closed)."""


class Cancelled(IxtoolError):
    """The run was stopped (SIGTERM, SIGINT, SIGHUP) or its session cancelled: every
    process of its traces is ended and no trace gives a result any more.  Exit status
    128 + the signal, as a shell reports a process the signal ended."""

    def __init__(self, signum: int = 15) -> None:
        import signal

        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        super().__init__(f"stopped by {name}: every process of the run's traces was ended "
                         "and its sandbox folders removed")
        self.exit_code = 128 + signum


@dataclass(frozen=True)
class Isolation:
    """How traces run: ``namespaces`` (ixtool's own user/mount/pid/net namespaces),
    ``bwrap`` (bubblewrap, for hosts that block unprivileged user namespaces but have a
    setuid or otherwise permitted bwrap), or ``basic`` (no isolation: only with
    ``--allow-unsandboxed``)."""

    mode: str
    bwrap: str | None = None
    why: str = ""


def choose_isolation(requested: bool | None, *, namespaces: bool, bwrap: str | None,
                     allow_unsandboxed: bool) -> Isolation:
    """The strongest isolation available, or :class:`SandboxUnavailable`.

    ``requested`` False (``IXTOOL_TRACE_NO_NAMESPACES=1``) skips the namespace mode and
    nothing else: bubblewrap is tried whatever was requested, and running without
    isolation needs both no bubblewrap and ``allow_unsandboxed``."""
    if requested is not False and namespaces:
        return Isolation("namespaces")
    if bwrap is not None:
        return Isolation("bwrap", bwrap=bwrap)
    why = ("namespaces were turned off (IXTOOL_TRACE_NO_NAMESPACES=1) and bubblewrap "
           "(bwrap) is not installed or cannot run" if requested is False
           else "unprivileged user namespaces are not available and bubblewrap (bwrap) "
           "is not installed or cannot run")
    if allow_unsandboxed:
        return Isolation("basic", why=why)
    raise SandboxUnavailable(
        f"no sandbox for tracing untrusted recipes: {why}",
        hint="allow user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns=0 "
        "on Ubuntu 24.04 runners) or install bubblewrap; --allow-unsandboxed runs the "
        "recipes without isolation (only on a machine with nothing to protect)")


def find_bwrap(path: str, *, prefix: Sequence[str] = ()) -> str | None:
    """A bubblewrap that can build a sandbox here (it runs ``true`` inside one), started
    through ``prefix`` (as root: ``setpriv`` to an unprivileged user, see
    :func:`inferencex_tools.sandbox.trace.Session`)."""
    import shutil

    found = shutil.which("bwrap", path=path)
    if found is None:
        return None
    probe = bwrap_argv(found, trace_dir="/tmp", readonly=("/",), uid=65534)
    return found if succeeds([*prefix, *probe, "true"], env={"PATH": path},
                             timeout=10) else None


def bwrap_argv(bwrap: str, *, trace_dir: str, readonly: Sequence[str] = ("/",),
               readonly_after: Sequence[str] = (), writable: Sequence[str] = (),
               uid: int = 65534, tmp_size: int = 256 * 1024 * 1024) -> list[str]:
    """The bubblewrap command line that runs a trace: new user (mapped to ``uid``, no
    supplementary groups, no capabilities), pid, network (loopback only, down), ipc and
    uts namespaces; the host read-only; a minimal ``/dev``; a fresh ``/proc``; private
    tmpfs at ``/tmp`` and ``/run``; ``readonly_after`` (ixtool's session, which may live
    below ``/tmp`` or ``/dev/shm``) read-only again on top; ``trace_dir`` (and
    ``writable``) the only writable host paths; a new session; killed with ixtool."""
    argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session",
            "--uid", str(uid), "--gid", str(uid), "--cap-drop", "ALL"]
    for p in readonly:
        argv += ["--ro-bind", p, p]
    argv += ["--dev", "/dev", "--proc", "/proc",
             "--size", str(tmp_size), "--tmpfs", "/tmp",
             "--size", str(16 * 1024 * 1024), "--tmpfs", "/run"]
    for p in readonly_after:
        argv += ["--ro-bind", p, p]
    for p in (*writable, trace_dir):
        argv += ["--bind", p, p]
    return argv
