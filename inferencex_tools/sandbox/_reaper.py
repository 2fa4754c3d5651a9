"""Run one trace's command as a child subreaper; when it ends, end every process it left.

Used where the trace has no pid namespace of its own (``--allow-unsandboxed``): a
``setsid``/``nohup``/double-forked process leaves the trace's process group and session,
but not its ancestry.  With PR_SET_CHILD_SUBREAPER every orphan of the trace is
re-parented to this process, which kills its children (their children become its
children in turn) until none is left.  Ends the same way on SIGTERM, SIGINT or SIGHUP
(ixtool's timeout), and when ixtool ends (the parent-death signal is SIGTERM).  The
command runs in a process group of its own (a stub's
``kill 0`` ends the trace, not its reaper).

Standalone (stdlib only, Python >= 3.7): copied into the session and run by path by the
system's ``python3``, never imported by ixtool.  Linux only.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1
GIVE_UP = 5.0  # seconds: a fork bomb outrunning the kills is left to the caller's SIGKILL


class Stop(Exception):
    pass


def _stop(signum: int, _frame: object) -> None:
    raise Stop(signum)


def children() -> list[int]:
    """The pids whose parent is this process."""
    me = os.getpid()
    try:
        out: list[int] = []
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as fh:
                out += [int(p) for p in fh.read().split()]
        return out
    except (OSError, ValueError):
        pass
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1] == str(me):
            out.append(int(name))
    return out


def reap() -> bool:
    """Collect every child that has ended; False when there is no child at all."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def end_all() -> None:
    deadline = time.monotonic() + GIVE_UP
    while time.monotonic() < deadline:
        kids = children()
        for pid in kids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if not reap() and not kids:
            return
        time.sleep(0.005)


def main() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.stderr.write("ixtool trace: cannot become a subreaper\n")
        return 97
    parent = os.getppid()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _stop)
    # ixtool ending (however) ends the trace: SIGTERM, and every process is ended below
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        return 137
    pid = os.fork()
    if pid == 0:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        try:
            os.setpgid(0, 0)  # a stub's `kill 0` ends the trace's group, not this process
            os.execv(sys.argv[1], sys.argv[1:])
        finally:
            os._exit(127)
    code = 137
    try:
        while True:
            try:
                got, status = os.waitpid(pid, 0)
            except ChildProcessError:
                break
            if got == pid:
                if os.WIFEXITED(status):
                    code = os.WEXITSTATUS(status)
                elif os.WIFSIGNALED(status):
                    code = 128 + os.WTERMSIG(status)
                break
    except Stop:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
    end_all()
    return code


if __name__ == "__main__":
    sys.exit(main())
