"""The recipe sandbox: run an untrusted bash script (a benchmark recipe, a launcher) with
stubbed servers and say what it would have launched.

This package is the whole boundary between ixtool and the code of a pull request.  The
judging code (``policy/``, ``launch/``, ``review/``: rows → traces → verdicts) uses only
the names below and never reaches inside (``tests/test_layering.py`` enforces it).

Public interface
    :class:`Session` (one repository copy, many traces, thread-safe ``trace``),
    :func:`trace_script` (a one-trace session), the results :class:`TraceResult`,
    :class:`Record` and :class:`ReadSet` (what a trace read of the repository),
    :class:`TraceCache` (results reused where a tree holds what the trace read), the
    per-trace bounds :class:`Limits`, :class:`SandboxUnavailable`
    (exit 2), :class:`Cancelled`, :func:`namespaces_available`.  The repository's
    functions (``benchmark_lib.sh``'s helpers included) run as they are: only programs
    are stubbed — among them the benchmark clients python would run by the file names
    :data:`CLIENT_SCRIPTS` (recorded, not run: what they read is nobody's verdict).

What it guarantees (docs/security.md §2 has the details and the tests)
    * **Isolation or nothing.**  A session uses ixtool's own namespaces (the trace
      server), else bubblewrap (also when namespaces were turned off), else raises
      :class:`SandboxUnavailable`; it runs without isolation (``isolation == "basic"``)
      only when the caller allowed it.
    * **Contained.**  With namespaces or bubblewrap a trace runs as an unprivileged
      user (never host root) without capabilities and with exactly the environment it
      is given, no network (not even loopback), the repository copy read-only, its own
      ``/proc``, ``/dev``, ``/tmp``, ``/run``; the only writable host path is its own
      trace directory.  Namespace mode shows only the host's system directories
      (read-only); bubblewrap shows the host read-only as that unprivileged user.
    * **Nothing outlives the trace, nor ixtool.**  Every process it starts ends with it
      (pid namespace; in basic mode a subreaper); so does its System V shared memory (its
      own IPC namespace).  The trace server, its waiters and the subreaper die with
      ixtool however it ends (parent-death signals); a SIGTERM, SIGINT or SIGHUP ends
      every trace of every live :class:`Session` at once (:meth:`Session.cancel`) and
      unwinds into :class:`Cancelled` (exit 128 + the signal; SIGINT: KeyboardInterrupt),
      which removes the sessions' folders.
    * **Bounded.**  Per process the kernel's limits (address space, file size, …); per
      trace, in every mode, ixtool's supervisor: the memory and the number of all its
      processes together, its output (:class:`Limits`), what it writes, a wall-clock
      timeout.  Past one the trace is killed.
    * **Results come only from the ledger and ixtool's own pipes.**  A trace's records,
      its stop mark and notes arrive through a FIFO only ixtool reads; its stdout,
      stderr and ``set -x`` stream through pipes only ixtool holds.  Files the script
      writes mean nothing.  A delivered record cannot be removed, changed or reordered.
    * **Reads known, or unknown — never partial.**  In namespace mode a trace's
      :attr:`TraceResult.reads` is every repository path its processes looked up,
      listed or found missing, whatever program did it: the checkout is reachable only
      through the trace server's read-recording view (a FUSE file system it serves
      itself, one trace at a time, its cache dropped after each; the workspace an
      overlay on it).  It is None where no
      such view exists (bubblewrap, basic, a host without FUSE or overlays in user
      namespaces), when the view failed during the trace, and for a trace the sandbox
      stopped.
    * **Fail closed.**  A trace the sandbox stopped (time, memory, processes, disk,
      output) or whose ledger it refuses (a line not from a stub, any cap reached, a
      record cut off) has ``stopped_by`` set (``"<kind>: <why>"``) and ``ok == False``:
      the caller gives no verdict from it.  No record is ever silently dropped.

What it does not guarantee
    * Records are not authenticated: a script can write a well-formed record itself,
      claiming a call it could equally have made through the stub.
    * A script can tell a trace from a job by behaviour (stubs answer instantly, there
      is no GPU); what it launches is what it launches *here*.
    * The bounds are sampled every 0.1 s (a trace can pass one for that long) and count
      user memory (not kernel memory); cgroup v2 is not used.
    * In basic mode (``--allow-unsandboxed``) only the timeout, the per-file limit, the
      per-trace bounds, the subreaper and, as root, user ``nobody`` hold.
"""

from __future__ import annotations

from inferencex_tools.sandbox._stubs import CLIENT_SCRIPTS
from inferencex_tools.sandbox.cache import TraceCache, host_digest
from inferencex_tools.sandbox.isolation import Cancelled, SandboxUnavailable
from inferencex_tools.sandbox.supervise import Limits
from inferencex_tools.sandbox.trace import (
    ReadSet,
    Record,
    Session,
    TraceResult,
    namespaces_available,
    trace_script,
)

__all__ = [
    "CLIENT_SCRIPTS",
    "Cancelled",
    "Limits",
    "ReadSet",
    "Record",
    "SandboxUnavailable",
    "Session",
    "TraceCache",
    "TraceResult",
    "host_digest",
    "namespaces_available",
    "trace_script",
]
