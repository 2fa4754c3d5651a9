"""Tracing sandbox: run a script under bash with stubbed servers and record what it
would launch (argv, environment, config files named in argv).

This is an I/O adapter.  One :class:`Session` per run materialises the repository
**once** (a copy without ``.git``, read-only; every repository file, the helpers of
``benchmarks/benchmark_lib.sh`` included, runs as it is: only programs are stubbed).
Each trace then gets, strongest isolation first:

* ``env -i`` plus exactly the variables it is given; its own directory holding the
  workspace (``ws/``: the working directory, whose entries link into the read-only
  repository, so a script writes its own files there), ``home/``, ``tmp/`` and
  ``fs/`` (where absolute paths of the job live, see :func:`localize`);
* stub executables first on ``PATH`` (:mod:`._stubs`, bash, cheap), ``sleep``
  capped at 0.05 s, Slurm simulated (``salloc``/``squeue``/``scancel``);
* namespace mode (the trace server, :mod:`._sandboxd`, when unprivileged namespaces
  and descriptor passing are available): no network, no capabilities, its own root
  (pivot_root) with the host's system directories read-only, the repository read-only,
  private ``/tmp``, ``/run``, ``/dev``, ``/proc`` and a ``/sys`` with two ACTIVE
  InfiniBand ports, its own pid namespace, limits; else bubblewrap; else (only with
  ``allow_unsandboxed``) no isolation: as root the script runs as user nobody, and a
  subreaper (:mod:`._reaper`) ends every process it leaves;
* stdout, stderr and the ``set -x`` trace go to pipes ixtool holds, records, the stop
  mark and notes to the trace's ledger (a FIFO ixtool alone reads, :class:`Ledger`):
  never files the script could reach; a wall-clock timeout and a file-size limit apply.

:func:`trace_script` keeps the one-shot interface (a session per call).
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import re
import selectors
import shutil
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from inferencex_tools.io.layout import SKIP_DIRS
from inferencex_tools.sandbox import _stubs
from inferencex_tools.sandbox.cache import TraceCache, TreeDigests, trace_key
from inferencex_tools.sandbox.isolation import (
    Cancelled,
    Child,
    SandboxUnavailable,
    bwrap_argv,
    choose_isolation,
    find_bwrap,
    spawn,
    succeeds,
)
from inferencex_tools.sandbox.supervise import (
    Limits,
    Supervisor,
    children,
    grandchildren,
    kill_children,
)

# where a trace sees its directory and the shared stubs (with namespaces): ordinary
# job-like paths, nothing that names ixtool (a recipe must not tell a trace from a job)
INNER_ROOT = "/home/runner"
MIN_SESSION_SPACE = 512 * 1024 * 1024
# with namespaces the session's shared stubs (its ``.ix``) are bound read-only here
SHARED_ROOT = "/venv"
NOBODY = 65534
MAX_COPY_FILE = 2 * 1024 * 1024
MAX_COPY_TOTAL = 256 * 1024 * 1024
MAX_FILE_SIZE = 64 * 1024 * 1024
MAX_CAPTURE = 64 * 1024
MAX_RECORD_BYTES = 4 * 1024 * 1024
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
UNSHARE = ("unshare", "--user", "--map-root-user", "--mount", "--net", "--pid", "--fork",
           "--kill-child", "--mount-proc")
# not part of what a job checks out (caches, virtual environments)
# absolute paths that stay as they are when an environment is localised
SYSTEM_PREFIXES = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/dev", "/proc", "/sys",
                   "/opt", "/var/run", "/run")
CONTAINED_PATTERNS = (
    ("Read-only file system", "write outside the sandbox directory blocked"),
    ("Network is unreachable", "network access blocked"),
    ("Could not resolve host", "network access blocked"),
    ("Temporary failure in name resolution", "network access blocked"),
    ("Name or service not known", "network access blocked"),
    ("Permission denied", "permission denied"),
)
NETWORK_TOOLS = ("curl", "wget", "git", "ssh", "scp", "rsync", "nc")


@dataclass(frozen=True)
class Record:
    """One call of a stubbed executable or benchmark_lib helper."""

    tool: str
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    files: dict[str, str]
    seq: int


@dataclass(frozen=True)
class ReadSet:
    """The repository paths one trace's processes touched, whatever program did it
    (bash, python, cat, a committed binary…), as paths relative to the checkout's root
    (the root itself is ``""``):

    * ``files``   looked up (a path walk, stat, open, exec) and existing; a symbolic
                  link's target as well as the link;
    * ``listed``  directories whose entries were read (a file added there can change
                  the run);
    * ``missing`` looked up and not there (a change that adds it changes the run).

    Recorded by the trace server's read-recording view of the checkout (namespace mode);
    :attr:`TraceResult.reads` is None where that view is not available (bubblewrap,
    unsandboxed, a host without FUSE or overlays in user namespaces) or failed during
    the trace, and for a trace the sandbox stopped: unknown, never partial."""

    files: frozenset[str]
    listed: frozenset[str]
    missing: frozenset[str]


MAX_READ_PATHS = 200_000  # per trace, the three sets together (the server's cap too)


def _read_set(got: Any) -> ReadSet | None:
    """The trace server's read set, checked (repository-relative strings only)."""
    if not isinstance(got, dict):
        return None
    sets: list[frozenset[str]] = []
    total = 0
    for name in ("files", "listed", "missing"):
        items = got.get(name)
        if not isinstance(items, list):
            return None
        total += len(items)
        if total > MAX_READ_PATHS or not all(
                isinstance(p, str) and not p.startswith("/") and
                ".." not in p.split("/") for p in items):
            return None
        sets.append(frozenset(items))
    return ReadSet(*sets)


@dataclass
class TraceResult:
    script: str
    env: dict[str, str]
    root: str  # the working directory (the workspace) as the script saw it
    isolation: str  # "namespaces" | "basic" | "static"
    returncode: int | None
    timed_out: bool
    seconds: float
    records: list[Record] = field(default_factory=list)
    stdout_tail: str = ""
    stderr_tail: str = ""
    last_line: str | None = None
    events: list[str] = field(default_factory=list)
    stopped: bool = False  # ended on purpose at the step it was traced for
    notes: list[str] = field(default_factory=list)  # what the sandbox stood in for
    sandbox: str = ""  # the trace directory as the script saw it
    cpu_seconds: float | None = None  # the traced processes' CPU (when the sandbox knows)
    # directories holding a copy of the checkout when a job step mounted them (staged
    # by the launcher: sbcast, tar, cp -r …), as the script saw them
    checkout_copies: list[str] = field(default_factory=list)
    # why the sandbox stopped the trace or refuses its bookkeeping, as "<kind>: <why>"
    # (kind: time, memory, processes, disk, output, ledger): then there is no verdict
    # from it, whatever its records say (``ok`` is False)
    stopped_by: str | None = None
    # the most the trace's processes held in memory / numbered at once (as sampled)
    peak_memory: int = 0
    peak_processes: int = 0
    # the repository paths the trace touched (None: unknown, see :class:`ReadSet`)
    reads: ReadSet | None = None
    # reused from the trace cache (:mod:`.cache`): the result of an earlier trace with the
    # same arguments that read the same bytes (its seconds are that trace's)
    cached: bool = False

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.stopped_by is None and \
            (self.returncode == 0 or self.stopped)


def _result_json(res: TraceResult) -> dict[str, Any]:
    """``res`` as JSON (the trace cache's entry; its read set is the entry's own)."""
    d = asdict(replace(res, reads=None, cached=False))
    d.pop("reads")
    d.pop("cached")
    return d


def _result_from(d: Mapping[str, Any], reads: ReadSet) -> TraceResult | None:
    """A cached result back (None: not one this version wrote)."""
    try:
        fields = dict(d)
        fields["records"] = [Record(tool=r["tool"], argv=tuple(r["argv"]), env=dict(r["env"]),
                                    cwd=r["cwd"], files=dict(r["files"]), seq=r["seq"])
                             for r in d["records"]]
        return TraceResult(**fields, reads=reads, cached=True)
    except (KeyError, TypeError, ValueError):
        return None


@cache
def namespaces_available() -> bool:
    """Can this process create user+mount+net+pid namespaces and remount read-only?"""
    if shutil.which("unshare") is None:
        return False
    return succeeds([*UNSHARE, "sh", "-c",
                     "mount -o remount,bind,ro / && mount -t tmpfs t /tmp"],
                    env={"PATH": BASE_PATH}, timeout=10)


def _has(name: str) -> bool:
    return shutil.which(name, path=BASE_PATH) is not None


def _as_nobody() -> list[str]:
    """As root: the prefix that starts a command as the unprivileged :data:`NOBODY`, no
    supplementary groups.  Bubblewrap maps its sandbox user to the user that starts it:
    started by root, the sandbox would be root without capabilities, which still reads
    whatever only root may (``/etc/shadow``)."""
    if os.geteuid() != 0:
        return []
    return [_tool("setpriv"), f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]


def server_supported() -> bool:
    """Does this Python have what the trace server needs (descriptor passing, pidfds)?
    Without it there is no namespace mode (fail closed, or bubblewrap)."""
    return hasattr(socket, "send_fds") and hasattr(os, "pidfd_open")


def _world_usable(path: str) -> bool:
    p = Path(path)
    try:
        if p.stat().st_mode & 0o005 != 0o005:
            return False
        return all(d.stat().st_mode & 0o001 for d in p.parents)
    except OSError:
        return False


def _client_manifest(repo: Path, clients: Mapping[str, Iterable[str]]) -> str:
    """The stub's list of the clients it records instead of running, one line each: the
    client's file name, its code's files relative to its directory and their SHA-256
    digests (tab-separated; the lists space-separated).  The stub records a client only
    when the file python runs has that name and its directory holds those files with
    those digests when it runs (a recipe may rewrite a client before running it); a
    name the line cannot carry leaves the client out (it runs)."""
    import hashlib

    lines = []
    for path, code in sorted(clients.items()):
        here = os.path.dirname(path) or "."
        files = list(code)
        rel = [os.path.relpath(f, here) for f in files]
        if path not in files or any(c in r for r in rel for c in " \t\n\\"):
            continue
        try:
            sums = [hashlib.sha256((repo / f).read_bytes()).hexdigest() for f in files]
        except OSError:
            continue
        lines.append(f"{os.path.basename(path)}\t{' '.join(rel)}\t{' '.join(sums)}\n")
    return "".join(lines)


@cache
def _tool(name: str) -> str:
    found = shutil.which(name, path=BASE_PATH)
    return os.path.realpath(found) if found else f"/usr/bin/{name}"


@cache
def _system_python() -> str:
    """The interpreter a traced script's real ``python3`` runs (the system's, not ixtool's)."""
    for cand in ("python3", "python"):
        found = shutil.which(cand, path=BASE_PATH)
        if found:
            return found
    return "/usr/bin/python3"


def localize(env: Mapping[str, str], *, fs_root: str,
             mounts: Iterable[tuple[str, str]] = ()) -> dict[str, str]:
    """Absolute paths of a job as harmless local paths.

    A value under one of ``mounts``' container paths (``(container, local)``) moves to
    its local directory; any other absolute path (one path, no ``:`` lists) moves
    below ``fs_root``.  System locations (:data:`SYSTEM_PREFIXES`) stay.
    """
    ms = sorted(((c.rstrip("/") or "/", loc) for c, loc in mounts), key=lambda m: -len(m[0]))
    out: dict[str, str] = {}
    for k, v in env.items():
        out[k] = _local(v, fs_root, ms)
    return out


def _local(v: str, fs_root: str, mounts: list[tuple[str, str]]) -> str:
    if not v.startswith("/") or ":" in v or any(c.isspace() for c in v) or \
            v.startswith(fs_root):
        return v
    for c, loc in mounts:
        if v == c or v.startswith(c.rstrip("/") + "/"):
            return loc.rstrip("/") + v[len(c.rstrip("/")):]
    if v == "/" or any(v == p or v.startswith(p + "/") for p in SYSTEM_PREFIXES):
        return v
    return fs_root.rstrip("/") + v


def _workspace_pairs(host: Path, workspace_at: tuple[str | tuple[str, str], ...]
                     ) -> dict[str, str]:
    """Path in the trace → subdirectory of the checkout, for each view of the checkout
    (the subdirectories are created in the trace's workspace)."""
    pairs: dict[str, str] = {}
    for b in workspace_at:
        path, sub = (b, "") if isinstance(b, str) else b
        pairs.setdefault(path.rstrip("/") or "/", sub.strip("/"))
    for sub in pairs.values():
        if sub:
            (host / "ws" / sub).mkdir(parents=True, exist_ok=True)
    return pairs


def _session_base() -> str | None:
    """Where a session lives: a memory file system when the machine has one with room
    (a session creates and removes thousands of small files: on a disk file system
    the inode bookkeeping costs more CPU than the traced scripts), else the default
    temporary directory."""
    for cand in ("/dev/shm",):
        try:
            st = os.statvfs(cand)
        except OSError:
            continue
        if os.path.isdir(cand) and os.access(cand, os.W_OK | os.X_OK) \
                and st.f_bavail * st.f_frsize >= MIN_SESSION_SPACE \
                and _is_memory_fs(cand):
            return cand
    return None


def _is_memory_fs(path: str) -> bool:
    try:
        with open("/proc/self/mounts", encoding="utf-8") as fh:
            best, fstype = "", ""
            for line in fh:
                f = line.split()
                if len(f) > 2 and (path == f[1] or path.startswith(f[1].rstrip("/") + "/")) \
                        and len(f[1]) >= len(best):
                    best, fstype = f[1], f[2]
    except OSError:
        return False
    return fstype == "tmpfs"


def _copy_tree(src: Path, dst: Path) -> tuple[list[str], list[str]]:
    """Copy ``src`` (without .git) to ``dst``; (top-level entries, skipped notes).

    Regular files and directories only; a symlink is kept when it is relative and stays
    inside the tree.  Executable bits are kept; in the sandbox the copy is read-only
    (a read-only bind with namespaces; owned by another user without)."""
    skipped: list[str] = []
    real = os.path.realpath(src)
    total = 0

    def walk(s: str, d: str, rel: str) -> None:
        nonlocal total
        os.mkdir(d)
        with os.scandir(s) as it:
            entries = list(it)
        for e in entries:
            if e.name in SKIP_DIRS or (e.is_dir(follow_symlinks=False) and
                                       os.path.exists(os.path.join(e.path, "pyvenv.cfg"))):
                continue
            sp, dp, rp = e.path, os.path.join(d, e.name), f"{rel}{e.name}"
            if e.is_symlink():
                target = os.readlink(sp)
                inside = os.path.realpath(os.path.join(s, target))
                if not target.startswith("/") and (inside == real or
                                                   inside.startswith(real + os.sep)):
                    os.symlink(target, dp)
                else:
                    skipped.append(f"{rp}: symlink leaving the repository")
            elif e.is_dir(follow_symlinks=False):
                walk(sp, dp, rp + "/")
            elif e.is_file(follow_symlinks=False):
                st = e.stat(follow_symlinks=False)
                if st.st_size > MAX_COPY_FILE or total + st.st_size > MAX_COPY_TOTAL:
                    skipped.append(f"{rp}: larger than the copy limit")
                    continue
                total += st.st_size
                shutil.copyfile(sp, dp, follow_symlinks=False)
                if st.st_mode & 0o111:
                    os.chmod(dp, 0o755)

    walk(str(src), str(dst), "")
    return sorted(os.listdir(dst)), skipped


def _q(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def _last_line(xtrace: str, root: str) -> str | None:
    lines = [ln for ln in xtrace.splitlines() if ln.startswith("+")]
    for ln in reversed(lines):
        m = re.match(r"^\++(?:\S*/)?([^/:]+):(\d+): (.*)$", ln)
        if m and not m.group(1).startswith(".benchmark_lib") and m.group(1) != "benchmark_lib.sh":
            return f"{m.group(1)}:{m.group(2)}: {m.group(3)[:200]}".replace(root + "/", "")
    return lines[-1][:200] if lines else None


_IGNORED_ENV = frozenset({"_", "SHLVL", "OLDPWD", "IXTRACE_PYFAKE",
                          "BASH_FUNC_command_not_found_handle%%", "BASH_FUNC_kill%%"})


# Records are data the traced script could also have produced: the stubs deliver them
# through the trace's ledger (see :mod:`._stubs`, "The ledger"), which ixtool reads as
# hostile input: line shape, counts and sizes are checked, only records whose tool is a
# stub, a recorded function or a stubbed `python -m` module are kept.
RECORD_ID = re.compile(r"[0-9]{1,20}(?:-[0-9]{1,20}){1,2}")
LEDGER_LINE = re.compile(rb"([0-9]{1,20}(?:-[0-9]{1,20}){1,2}) ([A-Za-z]) (.*)", re.S)
MAX_LEDGER_LINE = 8192  # a stub's line is < 4096 bytes
MAX_RECORDS = 4000  # per trace
MAX_RECORDS_BYTES = 64 * 1024 * 1024  # everything read from one trace's ledger
MAX_RECORD_FILES = 64  # config files captured per record
MAX_RECORD_ITEMS = 20_000  # argv words or environment entries per record
MAX_NOTES = 64 * 1024
_ITEMS = MAX_RECORD_ITEMS + 1  # read one more: more than the cap is an overflow
_PY_MODULE = re.compile(r"python -m [A-Za-z_][A-Za-z0-9_.]{0,200}")  # a stubbed module run
# a command found nowhere on the trace's PATH, stubbed as a tool of the container image
CONTAINER_TOOL = "container:"
_CONTAINER = re.compile(CONTAINER_TOOL + r"[A-Za-z0-9_.+@-]{1,200}")
_ESCAPE = re.compile(r"\\([\\nt])")
_UNESCAPED = {"n": "\n", "t": "\t", "\\": "\\"}


@cache
def _record_tools() -> frozenset[str]:
    return frozenset(_stubs.ALL_TOOLS)


@cache
def _client_tools() -> frozenset[str]:  # a benchmark client's record ("python <file>")
    return frozenset(f"python {c}" for c in _stubs.CLIENT_SCRIPTS)


def _stub_label(tool: str) -> bool:
    """Is ``tool`` a label a stub writes: a stubbed tool, ``python -m <module>``, a
    container tool, a benchmark client python runs by path?"""
    return bool(tool in _record_tools() or _PY_MODULE.fullmatch(tool)
                or _CONTAINER.fullmatch(tool) or tool in _client_tools())


def _items(blob: bytes, limit: int = MAX_RECORD_ITEMS) -> list[str]:
    """A blob's items (each escaped, followed by a tab)."""
    text = blob.decode("utf-8", errors="replace")
    parts = text.split("\t", limit)
    if len(parts) > limit:
        del parts[limit:]
    elif parts[-1] == "":
        parts.pop()
    if "\\" in text:
        parts = [_ESCAPE.sub(_unescape, p) if "\\" in p else p for p in parts]
    return parts


def _unescape(m: re.Match[str]) -> str:
    return _UNESCAPED[m[1]]


class _Open:
    """A record being delivered: its blobs by kind (upper case), as they came."""

    __slots__ = ("blobs", "late", "lines", "stop")

    def __init__(self, late: bool = False) -> None:
        self.blobs: dict[bytes, list[bytearray]] = {}
        self.lines = 0
        self.stop = False
        self.late = late  # begun after the script's end (the X line)

    def first(self, kind: bytes) -> str:
        got = self.blobs.get(kind)
        items = _items(bytes(got[0]), 1) if got else []
        return items[0] if items else ""


class Ledger:
    """The reading end of one trace's ledger: stub records, stop marks and notes.

    ``feed`` takes whatever the FIFO gave; :meth:`records`, :attr:`notes`,
    :meth:`stopped`, :attr:`tampered`, :attr:`overflow` and :attr:`cut` are the result.
    Anything that is not what a stub writes (a line that does not parse, a record whose
    line count does not match what its Z line says, a line for a record already
    complete) is tampering: counted, never an error.  A cap reached (records, open
    records, bytes, notes, captured files, items, item size) is :attr:`overflow`: what
    came after it is not read, and a genuine record may be among it.  A record begun
    and not complete when the ledger closes is :attr:`cut`.  Each of them fails the
    trace (:meth:`Session._booked`): no record is ever silently dropped."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._skip = False  # inside an over-long line
        self._open: dict[str, _Open] = {}
        self._done: dict[str, _Open] = {}
        self._left = MAX_RECORDS_BYTES
        self._notes: list[bytes] = []
        self._notes_left = MAX_NOTES
        self.notes: list[str] = []
        self.tampered = 0
        self.overflow: str | None = None  # the first cap reached
        self.cut = 0  # records begun before the script ended, not complete at the close
        self._ended = False  # the entry script said the traced script has ended (X)

    def _over(self, what: str) -> None:
        if self.overflow is None:
            self.overflow = what
        self._buf.clear()

    def feed(self, data: bytes) -> None:
        if self.overflow is not None:  # no verdict from this trace: nothing more to read
            return
        self._buf += data
        start = 0
        while True:
            end = self._buf.find(b"\n", start)
            if end < 0:
                break
            if self._skip:
                self._skip = False
            else:
                self._line(bytes(self._buf[start:end]))
            start = end + 1
        del self._buf[:start]
        if len(self._buf) > MAX_LEDGER_LINE:
            self.tampered += 1
            self._buf.clear()
            self._skip = True

    def _line(self, line: bytes) -> None:
        m = LEDGER_LINE.fullmatch(line) if len(line) <= MAX_LEDGER_LINE else None
        if m is None:
            self.tampered += 1
            return
        rid, kind, payload = m[1].decode(), m[2], m[3]
        if kind == b"X":  # the script ended; every stub it left had a second to finish
            self._ended = True
            return
        if kind == b"N":
            self._notes_left -= len(payload)
            if self._notes_left < 0:
                self._over(f"more than {MAX_NOTES >> 10} KiB of notes")
            else:
                self._notes.append(payload)
            return
        done = self._done.get(rid)
        if done is not None:
            if kind == b"S" and not done.stop:
                done.stop = True
            else:
                self.tampered += 1
            return
        rec = self._open.get(rid)
        if rec is None:
            if len(self._open) >= 2 * MAX_RECORDS:
                self._over(f"more than {2 * MAX_RECORDS:,} records open at once")
                return
            rec = self._open[rid] = _Open(self._ended)
        if kind == b"Z":
            del self._open[rid]
            if payload != f"{rec.lines}\t".encode():
                self.tampered += 1
            elif len(self._done) >= MAX_RECORDS:
                self._over(f"more than {MAX_RECORDS:,} records")
            else:
                self._done[rid] = rec
            return
        rec.lines += 1
        self._left -= len(payload)
        if self._left < 0:
            self._over(f"more than {MAX_RECORDS_BYTES >> 20} MiB of records")
            return
        self._add(rec, kind, payload)

    def _add(self, rec: _Open, kind: bytes, payload: bytes) -> None:
        upper = kind.upper()
        blobs = rec.blobs.setdefault(upper, [])
        if kind == upper:
            if len(blobs) >= MAX_RECORD_FILES:
                self._over(f"a record with more than {MAX_RECORD_FILES} items of one kind")
            else:
                blobs.append(bytearray(payload))
        elif not blobs:
            self.tampered += 1  # a continuation of nothing
        elif len(blobs[-1]) >= MAX_RECORD_BYTES:
            self._over(f"a record item over {MAX_RECORD_BYTES >> 20} MiB")
        else:
            blobs[-1] += payload

    def close(self) -> None:
        """The trace is over: what was delivered is final; a record begun and not
        complete now was cut off (by the trace's end, a kill, a limit)."""
        self.cut = sum(1 for r in self._open.values() if r.lines and not r.late)
        self.notes = [n for b in self._notes for n in _items(b, 64)]

    def problem(self, stopped: bool = False) -> str | None:
        """Why this ledger gives no verdict (tampering, a cap, a record cut off), or None.

        A record cut off is one begun while the script ran: when the script ends, the
        entry script gives every stub still recording a second to finish, then says so
        (X); a stub that begins only after that is cut by the end of the job, as a
        process the job's end kills (nothing waited for it).  A trace ``stopped`` at its
        step ends there on purpose: what ran beside the stop is cut at that point,
        recorded or not."""
        if self.tampered:
            return f"{self.tampered} line(s) not from a stub"
        if self.overflow is not None:
            return f"the ledger overflowed ({self.overflow})"
        if self.cut and not stopped:
            return f"{self.cut} record(s) cut off before they were complete"
        return None

    def stopped(self, stop: Iterable[str]) -> bool:
        """Did a complete record of one of the ``stop`` tools stop the trace?"""
        tools = set(stop)
        return any(r.stop and r.first(b"T") in tools for r in self._done.values())

    def records(self) -> list[Record]:
        """The complete records, in call order."""
        out: list[Record] = []
        ids = sorted(self._done, key=lambda i: tuple(int(x) for x in i.split("-")))
        for rid in ids:
            r = self._done[rid]
            tool = r.first(b"T")
            if not _stub_label(tool):
                continue  # not what a stub writes
            argv = [a for b in r.blobs.get(b"A", []) for a in _items(bytes(b), _ITEMS)]
            envs = [item for b in r.blobs.get(b"E", []) for item in _items(bytes(b), _ITEMS)]
            if max(len(argv), len(envs)) > MAX_RECORD_ITEMS:
                self._over(f"a record with more than {MAX_RECORD_ITEMS:,} argv words or "
                           "environment entries")
            env = {k: v for k, eq, v in (item.partition("=") for item in envs) if eq}
            for k in _IGNORED_ENV.intersection(env):
                del env[k]
            paths = [_items(bytes(b), 1) for b in r.blobs.get(b"P", [])]
            bodies = [_items(bytes(b), 1) for b in r.blobs.get(b"F", [])]
            files = {p[0]: f[0] if f else "" for p, f in zip(paths, bodies, strict=False)
                     if p}
            out.append(Record(tool=tool, argv=tuple(argv[:MAX_RECORD_ITEMS]), env=env,
                              cwd=r.first(b"W"), files=files, seq=len(out)))
        return out


class _Tail:
    """The last ``limit`` bytes written to a pipe."""

    def __init__(self, limit: int = MAX_CAPTURE) -> None:
        self.limit = limit
        self.buf = bytearray()
        self.total = 0  # bytes written to the pipe

    def add(self, b: bytes) -> None:
        self.total += len(b)
        self.buf += b
        if len(self.buf) > 2 * self.limit:
            del self.buf[:-self.limit]

    def text(self) -> str:
        return bytes(self.buf[-self.limit:]).decode("utf-8", errors="replace")


class _LedgerPipe:
    """The trace's ledger FIFO (``path``): ixtool holds its only reading end and one
    writing end (so the FIFO never reports end-of-file between two stubs); the FIFO is
    then made write-only (0222) before the trace starts."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path, 0o600)
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        self._keep = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with contextlib.suppress(OSError, AttributeError):
            fcntl.fcntl(self.fd, fcntl.F_SETPIPE_SZ, 1 << 20)
        os.chmod(path, 0o222)
        self.ledger = Ledger()

    def pump(self) -> None:
        """Everything the FIFO holds now."""
        while True:
            try:
                b = os.read(self.fd, 1 << 16)
            except OSError:  # BlockingIOError: nothing more for now
                return
            if not b:
                return
            self.ledger.feed(b)

    def close(self) -> Ledger:
        self.pump()
        os.close(self.fd)
        os.close(self._keep)
        self.ledger.close()
        return self.ledger


def _stamp(res: TraceResult, watch: Supervisor) -> None:
    """The trace's result as its supervisor saw it: peaks, and the bound it passed."""
    res.peak_memory, res.peak_processes = watch.peak_memory, watch.peak_processes
    over = watch.final()
    if over is not None and res.stopped_by is None:
        res.stopped_by = over
        res.returncode, res.timed_out = None, False
        res.events.append(f"stopped by the sandbox: {over.partition(': ')[2]}")


def _drain(proc: Child, pipes: dict[int, _Tail], timeout: float,
           *, kill_group: bool, ledger: _LedgerPipe, watch: Supervisor) -> bool:
    """Read the pipes until the process exits (or the timeout, or a bound of ``watch``
    is passed); True if timed out."""
    sel = selectors.DefaultSelector()
    for fd in pipes:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    sel.register(ledger.fd, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    timed_out = False
    exited_at: float | None = None
    try:
        while len(sel.get_map()) > 1:
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
                if kill_group:  # background children must not keep the pipes open
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
            over = watch.check() if exited_at is None else None
            if exited_at is None and (now > deadline or over):
                timed_out = not over
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(proc.pid, signal.SIGTERM)  # the reaper ends every process
                    if proc.wait(1.0) is None:
                        os.killpg(proc.pid, signal.SIGKILL)
                exited_at = now
            if exited_at is not None and now - exited_at > 2.0:
                break
            for key, _ in sel.select(timeout=0.05):
                if key.fd == ledger.fd:
                    ledger.pump()
                else:
                    _read_pipe(int(key.fd), pipes, sel)
    finally:
        sel.close()
    proc.wait()
    return timed_out


def _read_now(fd: int) -> bytes | None:
    """One read of a non-blocking pipe: its bytes, ``b""`` at EOF (or on an error),
    None when nothing is there now."""
    try:
        return os.read(fd, 1 << 16)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _read_pipe(fd: int, pipes: dict[int, _Tail], sel: selectors.BaseSelector) -> None:
    """One read from a trace's output pipe: kept in its tail, or unregistered at EOF."""
    b = _read_now(fd)
    if b is None:
        return
    if b:
        pipes[fd].add(b)
    else:
        sel.unregister(fd)


PIPE_SIZE = 1 << 20  # a trace's output pipes (what it writes between two batched reads)
BATCH = 0.02  # seconds between two reads of a running trace's pipes


def _widen(fds: Iterable[int]) -> None:
    """Pipes of :data:`PIPE_SIZE` where the system allows it (fewer blocked writers
    between two batched reads; the default still works, the writer waits a little)."""
    for fd in fds:
        with contextlib.suppress(OSError, AttributeError):
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)


def _drain_open(pipes: dict[int, _Tail], open_fds: set[int]) -> None:
    """Everything the still open pipes hold now (EOF closes a pipe's entry)."""
    for fd in list(open_fds):
        while (b := _read_now(fd)) is not None:
            if not b:
                open_fds.discard(fd)
                break
            pipes[fd].add(b)


def _collect(pipes: dict[int, _Tail], sock: socket.socket, ledger: _LedgerPipe,
             watch: Supervisor, grace: float = 2.0) -> dict[str, Any] | None:
    """Read the pipes until the trace server answers, then until the pipes close.

    The pipes are read in batches (every :data:`BATCH` seconds and when the answer
    comes), not at each write: a traced shell writes its ``set -x`` trace one line at a
    time, and waking up for each line cost ixtool more CPU than the trace itself."""
    open_fds = set(pipes)
    for fd in open_fds:
        os.set_blocking(fd, False)
    reply: dict[str, Any] | None = None
    sel = selectors.DefaultSelector()
    sel.register(sock.fileno(), selectors.EVENT_READ)
    try:
        while True:
            ready = sel.select(timeout=BATCH)
            _drain_open(pipes, open_fds)
            ledger.pump()
            if watch.check() is not None:
                watch.kill()  # the server then answers for the trace
            if ready:
                reply = _recv_json(sock)
                break
    finally:
        sel.close()
    # the trace's processes are gone with its pid namespace: the pipes close now
    # (a server that died leaves nothing behind either)
    answered = time.monotonic()
    wait = selectors.DefaultSelector()
    for fd in open_fds:
        wait.register(fd, selectors.EVENT_READ)
    try:
        while open_fds and time.monotonic() - answered <= grace:
            wait.select(timeout=BATCH)
            before = set(open_fds)
            _drain_open(pipes, open_fds)
            for fd in before - open_fds:
                wait.unregister(fd)
            ledger.pump()
    finally:
        wait.close()
    return reply


def _recv_json(sock: socket.socket) -> dict[str, Any] | None:
    sock.setblocking(True)
    head = b""
    while len(head) < 4:
        b = sock.recv(4 - len(head))
        if not b:
            return None
        head += b
    (n,) = struct.unpack("!I", head)
    body = b""
    while len(body) < n:
        b = sock.recv(n - len(body))
        if not b:
            return None
        body += b
    out: dict[str, Any] = json.loads(body)
    return out


def _send_json(sock: socket.socket, obj: dict[str, Any], fds: list[int]) -> None:
    data = json.dumps(obj).encode()
    msg = struct.pack("!I", len(data)) + data
    socket.send_fds(sock, [msg[:4]], fds)
    sock.sendall(msg[4:])


class _Server:
    """One trace server (:mod:`._sandboxd`) inside its own namespaces, for one worker."""

    def __init__(self, session: Session) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock = parent
        stage = Path(tempfile.mkdtemp(prefix="stage-", dir=session.dir))
        # the server enters its user (unprivileged uid), mount and network namespaces
        # itself (_sandboxd.enter_namespaces)
        cmd = [sys.executable, "-I", "-S", str(session.dir / "sandboxd.py"),
               str(child.fileno()), str(stage)]
        if session.record_reads:  # the checkout served through the read-recording view
            cmd.append(str(session.repo))
        self.proc = spawn(cmd, env={"PATH": BASE_PATH}, pass_fds=(child.fileno(),),
                          capture=False)
        child.close()
        hello = _recv_json(parent)
        self.ok = bool(hello and hello.get("ready"))
        self.reads = bool(hello and hello.get("reads"))  # the read-recording view works
        self.error = str((hello or {}).get("error") or "the trace server did not answer")[:300]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        if self.proc.wait(timeout=5) is None:
            self.proc.kill()
            self.proc.wait()

    def kill(self) -> None:
        """End the server now, and with it every trace it runs (its waiters, and their
        pid namespaces, die with it: PR_SET_PDEATHSIG)."""
        with contextlib.suppress(OSError):
            self.proc.kill()


# ----------------------------------------------------------------- cancellation
# Every live session of this process.  A SIGTERM, SIGINT or SIGHUP ends their traces at
# once (servers killed, the unsandboxed reapers told to end their trees) before the
# signal is turned into an exception in the main thread, which unwinds every `with
# Session(...)` (its folder removed).  The handlers are installed while a session lives
# (from the main thread: only it may) and the previous ones restored after the last.
_LIVE: weakref.WeakSet[Session] = weakref.WeakSet()
_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_PREVIOUS: dict[int, Any] = {}
_REGISTRY = threading.Lock()


def _on_signal(signum: int, _frame: object) -> None:
    for session in list(_LIVE):
        session.cancel()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Cancelled(signum)


def _watch(session: Session) -> None:
    with _REGISTRY:
        _LIVE.add(session)
        if _PREVIOUS or threading.current_thread() is not threading.main_thread():
            return
        for sig in _SIGNALS:
            with contextlib.suppress(ValueError, OSError):
                _PREVIOUS[sig] = signal.signal(sig, _on_signal)


def _unwatch(session: Session) -> None:
    with _REGISTRY:
        _LIVE.discard(session)
        if _LIVE or not _PREVIOUS or \
                threading.current_thread() is not threading.main_thread():
            return
        for sig, previous in _PREVIOUS.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, previous)
        _PREVIOUS.clear()


class Session:
    """One run's sandbox: the repository materialised once, traces in parallel."""

    def __init__(self, repo: Path, *, isolate: bool | None = None, keep: bool = False,
                 allow_unsandboxed: bool = False, limits: Limits | None = None,
                 record_reads: bool = True,
                 clients: Mapping[str, Iterable[str]] | None = None,
                 cache: TraceCache | None = None) -> None:
        """``clients``: the benchmark clients a trace records instead of running (their
        repository path → the files of their code, repository paths); any other client
        runs as it is (:func:`_client_manifest`).  ``cache``: reuse (and keep) results
        of traces that read the same bytes (:mod:`.cache`; namespace mode only, the one
        that records read sets)."""
        self.limits = limits or Limits()
        # fail closed: no isolation is an error unless unsandboxed runs are allowed
        # namespace mode is the trace server's (no fallback with a weaker layout)
        namespaces = isolate is not False and namespaces_available() and server_supported()
        bwrap = None  # bubblewrap before any unsandboxed run, whatever ``isolate`` says
        if not namespaces and (os.geteuid() != 0 or _has("setpriv")):
            bwrap = find_bwrap(BASE_PATH, prefix=_as_nobody())
        iso = choose_isolation(isolate, namespaces=namespaces, bwrap=bwrap,
                               allow_unsandboxed=allow_unsandboxed)
        self.isolate = iso.mode == "namespaces"
        self.bwrap = iso.bwrap
        # False: no read-recording view (every read set unknown; to measure its cost)
        self.record_reads = record_reads
        self.keep = keep
        self.dir = Path(tempfile.mkdtemp(prefix="ixtool-trace-", dir=_session_base())).resolve()
        self.repo = self.dir / "repo"
        self.tops, self.notes = _copy_tree(Path(repo), self.repo)
        self._clients = _client_manifest(self.repo, clients or {})
        self.cache = cache if record_reads else None
        self.reuse = True  # False: the cache is not looked up (its entries are still kept)
        self.digests = TreeDigests(self.repo)
        if not self.isolate and not self.bwrap:
            # (namespaces, bubblewrap: the copy is mounted read-only; its own modes stay
            # those of a checkout, so what a script copies out of it stays writable)
            self._protect(self.repo)
        self.drop = (not self.isolate and not self.bwrap and os.geteuid() == 0
                     and shutil.which("setpriv") is not None
                     and _world_usable(_system_python()) and _world_usable(_tool("bash")))
        (self.dir / "t").mkdir()
        (self.dir / "r").mkdir()
        (self.dir / "b").mkdir()  # each trace's bookkeeping (conf, ledger): read-only inside
        self.dir.chmod(0o755)
        if not self.isolate and not self.bwrap:  # ends what the trace leaves (no pid ns)
            shutil.copyfile(Path(__file__).with_name("_reaper.py"), self.dir / "reaper.py")
        self._n = itertools.count()
        self._lock = threading.Lock()
        self._local = threading.local()
        self._servers: list[_Server] = []
        if self.isolate:
            shutil.copyfile(Path(__file__).with_name("_sandboxd.py"), self.dir / "sandboxd.py")
            shutil.copyfile(Path(__file__).with_name("_readfs.py"), self.dir / "_readfs.py")
        # with namespaces every trace sees the session's stubs at SHARED_ROOT and its own
        # directory at INNER_ROOT: one set of stubs serves them all
        self.shared = self.isolate
        if self.shared:
            self._tools(self.dir / ".ix", INNER_ROOT, SHARED_ROOT, f"{SHARED_ROOT}/trace")
            (self.dir / ".ix" / "trace").mkdir()  # where each trace's book is bound
        self.cancelled = False
        self._children: dict[int, Child] = {}  # running traces without the trace server
        _watch(self)

    # -- setup
    @staticmethod
    def _protect(root: Path) -> None:
        for dirpath, _, _ in os.walk(root, topdown=False):
            os.chmod(dirpath, 0o555)

    def _server(self) -> _Server:
        srv: _Server | None = getattr(self._local, "server", None)
        if srv is None:
            if self.cancelled:
                raise Cancelled()
            srv = _Server(self)
            with self._lock:
                self._servers.append(srv)
            if self.cancelled:  # (cancelled while it started: cancel() did not see it)
                srv.kill()
                raise Cancelled()
            if not srv.ok:  # fail closed: no trace without the server's namespaces
                raise SandboxUnavailable(
                    f"the trace sandbox could not start: {srv.error}",
                    hint="ixtool needs unprivileged user, mount, pid and network "
                    "namespaces for its trace server; --allow-unsandboxed runs the "
                    "recipes without isolation (only on a machine with nothing to protect)")
            self._local.server = srv
        return srv

    def cancel(self) -> None:
        """End every trace of this session now and refuse new ones (:class:`Cancelled`);
        a trace in flight gives no result.  Safe from a signal handler: it only sends
        signals."""
        self.cancelled = True
        for srv in list(self._servers):
            srv.kill()
        for child in list(self._children.values()):
            with contextlib.suppress(OSError):
                if self.bwrap:  # its sandbox (pid namespace) ends with it
                    os.killpg(child.pid, signal.SIGKILL)
                else:  # the reaper ends every process of its trace, then itself
                    os.kill(child.pid, signal.SIGTERM)

    def close(self) -> None:
        with self._lock:
            servers, self._servers = list(self._servers), []
        if self.cancelled:
            for srv in servers:
                srv.kill()
        for srv in servers:
            srv.close()
        _unwatch(self)
        if self.keep:
            return
        _rmtree(self.dir)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def isolation(self) -> str:
        return "namespaces" if self.isolate else "bwrap" if self.bwrap else "basic"

    def inner_root(self, host: Path) -> str:
        return INNER_ROOT if self.isolate else str(host)

    def new_trace_dir(self) -> tuple[Path, str, Path]:
        with self._lock:
            n = next(self._n)
        host = self.dir / "t" / str(n)
        host.mkdir()
        rootdir = self.dir / "r" / str(n)
        rootdir.mkdir()
        return host, self.inner_root(host), rootdir

    def book_dir(self, host: Path) -> Path:
        """The trace's bookkeeping: outside its directory, read-only inside the sandbox
        (namespaces: bound read-only at ``/venv/trace``; bubblewrap: the session is
        read-only)."""
        return self.dir / "b" / host.name

    def _tools(self, ix: Path, root: str, seen: str, book: str) -> None:
        """The stubs, the traced shell's entry and the Python stand-ins, in ``ix`` (seen by
        the traced script at ``seen``; its trace directory at ``root``, its bookkeeping
        (conf, ledger) at ``book``)."""
        (ix / "bin").mkdir(parents=True)
        (ix / "py").mkdir()
        (ix / "tops").write_text("".join(f"{t}\n" for t in self.tops))
        (ix / "clients").write_text(self._clients)
        stub = (_stubs.STUB.replace("@ROOT@", _q(root)).replace("@TRACE@", _q(book))
                .replace("@SLEEP@", _tool("sleep"))
                .replace("@PYTHON@", _system_python()).replace("@ENV@", _tool("env"))
                .replace("@HEAD@", _tool("head")).replace("@MKDIR@", _tool("mkdir"))
                .replace("@SED@", _tool("sed")).replace("@PATCH@", _tool("patch"))
                .replace("@PYDIR@", f"{seen}/py")
                .replace("@BIN@", _q(f"{seen}/bin"))
                .replace("@STUB_MODULES@", " ".join(_stubs.STUB_MODULES))
                .replace("@CLIENT_SCRIPTS@", " ".join(_stubs.CLIENT_SCRIPTS))
                .replace("@CLIENTS@", _q(f"{seen}/clients"))
                .replace("@NETWORK@", " ".join(NETWORK_TOOLS))
                .replace("@SHA256SUM@", _tool("sha256sum"))
                .replace("@DAEMONS@", " ".join(_stubs.DAEMON_TOOLS))
                .replace("@NO_ENV@", " ".join(_stubs.NO_ENV_TOOLS)))
        (ix / "bin" / ".stub").write_text(stub.replace("@LIB@", _q(f"{seen}/bin/.stub-lib")))
        (ix / "bin" / ".stub").chmod(0o755)
        for part, text in _stubs.STUB_LIBS.items():
            (ix / "bin" / f".stub-lib-{part}").write_text(
                text.replace("@ROOT@", _q(root)).replace("@PYDIR@", f"{seen}/py"))
        for tool in _stubs.ALL_TOOLS:
            if tool != "sed":  # (its own front, below)
                os.symlink(".stub", ix / "bin" / tool)
        (ix / "bin" / ".sed").mkdir()
        os.symlink("../.stub", ix / "bin" / ".sed" / "sed")
        (ix / "bin" / "sed").write_text(_stubs.SED_FRONT.replace("@BIN@", _q(f"{seen}/bin"))
                                        .replace("@SED@", _tool("sed")))
        (ix / "bin" / "sed").chmod(0o755)
        (ix / "stdin").write_text("")  # the traced shell's stdin: empty, not /dev/null
        (ix / "inner.sh").write_text(_stubs.INNER.replace("@BASH@", _tool("bash"))
                                     .replace("@STDIN@", _q(f"{seen}/stdin"))
                                     .replace("@BIN@", f"{seen}/bin")
                                     .replace("@SLEEP@", _tool("sleep"))
                                     .replace("@LEDGER@", _q(f"{book}/ledger"))
                                     .replace("@STUB@", _q(f"{seen}/bin/.stub")))
        (ix / "py" / "sitecustomize.py").write_text(
            _stubs.SITE.replace("@ROOTS@", repr(sorted(_stubs.FAKE_PACKAGES)))
            .replace("@INNER@", INNER_ROOT))

    def bin_dir(self, inner: str) -> str:
        return f"{SHARED_ROOT}/bin" if self.shared else f"{inner}/.ix/bin"

    def inner_script(self, inner: str) -> str:
        return f"{SHARED_ROOT}/inner.sh" if self.shared else f"{inner}/.ix/inner.sh"

    def _install(self, host: Path, inner: str, stop: Iterable[str], gpu: str, *,
                 overlay: bool = False) -> _LedgerPipe:
        ix = host / ".ix"
        ix.mkdir(exist_ok=True)
        book = self.book_dir(host)
        book.mkdir()
        (book / "conf").write_text(f"{' '.join(stop)}\n{gpu}\n")
        ledger = _LedgerPipe(book / "ledger")
        for d in ("ws", "home", "tmp"):
            (host / d).mkdir()
        if self.isolate:
            (host / "repo").mkdir()
        else:
            os.symlink(str(self.repo), host / "repo")
            (host / "fs").mkdir()
        if overlay:  # the workspace is an overlay on the checkout (_sandboxd.build_root)
            (host / ".ovl").mkdir()
        else:
            for top in self.tops:  # absolute: the workspace is also seen at container paths
                os.symlink(f"{inner}/repo/{top}", host / "ws" / top)
        if not self.shared:
            self._tools(ix, inner, f"{inner}/.ix", str(book))
            os.symlink(book, ix / "trace")  # beside the stubs, as their text names it
        return ledger

    # -- one trace
    def trace(self, script: str, env: Mapping[str, str], *, timeout: float = 60.0,
              stop: Iterable[str] = (), workspace_at: Iterable[str | tuple[str, str]] = (),
              cwd: str | None = None, inline: str | None = None) -> TraceResult:
        """Run ``script`` (relative to ``cwd``) with exactly ``env`` (+ PATH, HOME, TMPDIR,
        LANG).

        ``workspace_at``: the paths at which the job sees the checkout (the container's
        mount of ``$GITHUB_WORKSPACE``, ``$GITHUB_WORKSPACE`` itself); the trace's
        workspace appears there (``(path, sub)``: its subdirectory ``sub``).  ``cwd``: the
        working directory as the job sees it (default: the first of ``workspace_at``,
        else the workspace).  With namespaces
        every other absolute path is the trace's own; without, absolute paths in ``env``
        are moved below the trace directory (:func:`localize`).  ``stop``: stub tools
        that end the trace when they run a script or submit a job.  ``inline``: run this
        script text (ixtool's own, e.g. a launcher's action read statically) instead."""
        if self.cancelled:
            raise Cancelled()
        key = None
        if self.cache is not None and self.isolate:
            key = trace_key(script=script, env=sorted(env.items()), timeout=timeout,
                            stop=list(stop), workspace_at=list(workspace_at), cwd=cwd,
                            inline=inline, clients=self._clients, limits=asdict(self.limits))
            got = self._cached(key) if self.reuse else None
            if got is not None:
                return got
        res = self._trace(script, env, timeout=timeout, stop=stop, workspace_at=workspace_at,
                          cwd=cwd, inline=inline)
        if key is not None and self.cache is not None and res.ok and res.reads is not None:
            r = res.reads
            self.cache.store(key, _result_json(res), r.files, r.listed, r.missing,
                             self.digests)
        return res

    def _cached(self, key: str) -> TraceResult | None:
        assert self.cache is not None
        got = self.cache.lookup(key, self.digests)
        if got is None:
            return None
        reads = got["reads"]
        rs = ReadSet(frozenset(reads["files"]), frozenset(reads["listed"]),
                     frozenset(reads["missing"]))
        return _result_from(got["result"], rs)

    def _trace(self, script: str, env: Mapping[str, str], *, timeout: float,
               stop: Iterable[str], workspace_at: Iterable[str | tuple[str, str]],
               cwd: str | None, inline: str | None) -> TraceResult:
        host, inner, rootdir = self.new_trace_dir()
        if inline is not None:
            (host / ".ix").mkdir()
            (host / ".ix" / "inline.sh").write_text(inline)
            script = f"{inner}/.ix/inline.sh"
        try:
            res = self._run(host, inner, rootdir, script, env, timeout=timeout,
                            stop=tuple(stop), workspace_at=tuple(workspace_at), cwd=cwd)
            if self.cancelled:  # ended by the cancel: nothing of it counts
                raise Cancelled()
            return res
        finally:
            if not self.keep:
                _rmtree(host)
                _rmtree(self.book_dir(host))
                with contextlib.suppress(OSError):
                    rootdir.rmdir()

    def _run(self, host: Path, inner: str, rootdir: Path, script: str,
             env: Mapping[str, str], *, timeout: float, stop: tuple[str, ...],
             workspace_at: tuple[str | tuple[str, str], ...], cwd: str | None) -> TraceResult:
        gpu = str(env.get("RUNNER_NAME", "h200")).split("-", 1)[0].split("_", 1)[0].upper()
        srv = self._server() if self.isolate else None
        ledger = self._install(host, inner, stop, gpu or "H200",
                               overlay=srv is not None and srv.reads)
        ws = f"{inner}/ws"
        pairs = _workspace_pairs(host, workspace_at)
        local = [(p, f"{ws}/{sub}".rstrip("/")) for p, sub in pairs.items()]
        full = dict(env)
        if self.isolate:
            workdir = cwd or (next(iter(pairs)) if pairs else ws)
        else:
            full = localize(full, fs_root=f"{inner}/fs", mounts=local)
            workdir = _local(cwd, f"{inner}/fs", local) if cwd else \
                (local[0][1] if local else ws)
            script = _local(script, f"{inner}/fs", local)
        for k in ("PATH", "HOME", "PWD", "TMPDIR", "LANG"):
            full.pop(k, None)
        full.update({"PATH": f"{self.bin_dir(inner)}:{BASE_PATH}", "HOME": f"{inner}/home",
                     "TMPDIR": "/tmp" if self.isolate else f"{inner}/tmp",
                     "LANG": "C.UTF-8"})
        try:
            if self.isolate:
                assert srv is not None
                res = self._run_served(srv, host, inner, rootdir, script, env,
                                       full, workdir, pairs, timeout, ledger)
            else:
                res = self._run_spawned(host, inner, script, env, full, workdir, timeout,
                                        ledger)
        finally:
            book = ledger.close()
        return self._booked(res, book, stop)

    def _run_spawned(self, host: Path, inner: str, script: str, env: Mapping[str, str],
                     full: dict[str, str], workdir: str, timeout: float,
                     ledger: _LedgerPipe) -> TraceResult:
        """A trace without the trace server (bubblewrap, or unsandboxed: then as nobody
        when it can drop privileges, under the subreaper that ends every process the
        trace leaves), its pipes drained here."""
        xr, xw = os.pipe()
        cmd = [_tool("bash"), "--noprofile", "--norc", self.inner_script(inner), script,
               workdir, str(xw)]
        if self.drop or (self.bwrap and os.geteuid() == 0):
            _give_to(host, NOBODY)
        if self.bwrap:
            cmd = [*_as_nobody(), *bwrap_argv(self.bwrap, trace_dir=str(host), uid=NOBODY,
                                               readonly_after=(str(self.dir),)), *cmd]
        else:
            py = _system_python() if os.path.exists(_system_python()) else sys.executable
            cmd = [py, "-I", "-S", str(self.dir / "reaper.py"), *cmd]
        if self.drop:
            cmd = [_tool("setpriv"), f"--reuid={NOBODY}", f"--regid={NOBODY}",
                   "--clear-groups", "--", *cmd]
        if shutil.which("prlimit", path=BASE_PATH):
            cmd = [_tool("prlimit"), f"--fsize={MAX_FILE_SIZE}", "--core=0", "--", *cmd]
        start = time.monotonic()
        try:
            with self._lock:
                if self.cancelled:
                    raise Cancelled()
                proc = spawn(cmd, env=full, cwd=host, pass_fds=(xw,))
                self._children[proc.pid] = proc
            if self.cancelled:  # (cancelled meanwhile: cancel() may not have seen it)
                self.cancel()
        finally:
            os.close(xw)
        tails = {proc.stdout_fd(): _Tail(), proc.stderr_fd(): _Tail(), xr: _Tail()}
        # the trace's processes: everything below the sandbox's first process
        watch = Supervisor(lambda: children(proc.pid), self.limits, tails.values())
        try:
            timed_out = _drain(proc, tails, timeout, kill_group=not self.isolate,
                               ledger=ledger, watch=watch)
        finally:
            self._children.pop(proc.pid, None)
            os.close(xr)
            proc.close_pipes()
        seconds = time.monotonic() - start
        res = TraceResult(
            script=script, env=dict(env), root=workdir, isolation=self.isolation,
            returncode=None if timed_out else proc.returncode, timed_out=timed_out,
            seconds=seconds, sandbox=inner,
        )
        _stamp(res, watch)
        return self._finish(res, host, tails, xr, timeout)

    def _run_served(self, srv: _Server, host: Path, inner: str, rootdir: Path, script: str,
                    env: Mapping[str, str], full: dict[str, str], workdir: str,
                    pairs: dict[str, str], timeout: float, ledger: _LedgerPipe
                    ) -> TraceResult:
        req = {"trace": str(host), "rootdir": str(rootdir), "repo_view": "",
               "shared": f"@HOST@{self.dir}/.ix", "shared_at": SHARED_ROOT,
               "book": f"@HOST@{self.book_dir(host)}",
               "script": script, "cwd": workdir, "env": full, "timeout": timeout,
               "binds": list(pairs.items()), "system": list(_stubs.SYSTEM_DIRS),
               "bash": _tool("bash"), "inner": self.inner_script(inner),
               "inner_root": INNER_ROOT, "memory": self.limits.memory}
        # the repository as the server sees the host: below its read-only host view
        req["repo_view"] = "@HOST@" + str(self.repo)
        if os.geteuid() == 0:  # the sandbox's root is an unprivileged uid (_sandboxd)
            _give_to(host, NOBODY)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        xr, xw = os.pipe()
        _widen((out_r, err_r, xr))
        start = time.monotonic()
        try:
            _send_json(srv.sock, req, [out_w, err_w, xw])
        finally:
            for fd in (out_w, err_w, xw):
                os.close(fd)
        tails = {out_r: _Tail(), err_r: _Tail(), xr: _Tail()}
        # the trace's processes: its pid namespace's first process (a child of the
        # server's waiter) and everything below; ended by killing the waiter
        server = srv.proc.pid
        watch = Supervisor(lambda: grandchildren(server), self.limits, tails.values())
        watch.kill = lambda: kill_children(server)
        try:
            reply = _collect(tails, srv.sock, ledger, watch)
        finally:
            for fd in (out_r, err_r):
                os.close(fd)
        seconds = time.monotonic() - start
        if reply is None:  # the server died: nothing more from it in this session
            self._local.server = None
            reply = {"rc": 97, "timed_out": False}
        timed_out = bool(reply.get("timed_out"))
        limit = str(reply["limit"])[:200] if reply.get("limit") else None
        res = TraceResult(
            script=script, env=dict(env), root=workdir, isolation=self.isolation,
            returncode=None if timed_out or limit else int(reply.get("rc", 97)),
            timed_out=timed_out, seconds=seconds, sandbox=inner, cpu_seconds=reply.get("cpu"),
            reads=_read_set(reply.get("reads")),
        )
        if limit:  # stopped by the sandbox: no verdict from a partial trace
            res.stopped_by = limit
            res.events.append(f"stopped by the sandbox: {limit.partition(': ')[2] or limit}")
        _stamp(res, watch)
        try:
            return self._finish(res, host, tails, xr, timeout)
        finally:
            os.close(xr)

    def _finish(self, res: TraceResult, host: Path, tails: dict[int, _Tail], xr: int,
                timeout: float) -> TraceResult:
        fds = list(tails)
        res.stdout_tail = tails[fds[0]].text()[-4000:]
        res.stderr_tail = tails[fds[1]].text()[-4000:]
        res.last_line = _last_line(tails[xr].text(), res.sandbox)
        if res.returncode == 97:
            res.events.append("sandbox setup failed")
        if res.timed_out:
            res.events.append(f"killed after the {timeout:g}s timeout")
            res.stopped_by = res.stopped_by or f"time: killed after the {timeout:g}s timeout"
        for pat, what in CONTAINED_PATTERNS:
            if pat in res.stderr_tail and what not in res.events:
                res.events.append(what)
        return res

    @staticmethod
    def _booked(res: TraceResult, ledger: Ledger, stop: Iterable[str]) -> TraceResult:
        """What the trace's ledger says: its records, whether it stopped where it was
        traced for, the stubs' notes; tampering with it fails the trace (no verdict)."""
        res.records = ledger.records()
        res.stopped = ledger.stopped(stop) and not res.timed_out
        for line in ledger.notes:
            if line.startswith("network tool ") and line not in res.events:
                res.events.append(line)  # (the stub's ix_local_url decides: another host)
            elif line.startswith("sed -i failed") and \
                    "write outside the sandbox directory blocked" not in res.events:
                res.events.append("write outside the sandbox directory blocked")
            elif line.startswith(("missing runner file", "container tool stubbed: ",
                                  "container content step stubbed: ")) and \
                    line not in res.notes:
                res.notes.append(line)
            elif line.startswith("checkout copy: ") and line[15:] not in res.checkout_copies:
                res.checkout_copies.append(line[15:])
        problem = ledger.problem(res.stopped)
        if problem is not None:
            res.returncode, res.stopped = None, False
            res.stopped_by = res.stopped_by or f"ledger: {problem}"
            res.events.append("stopped by the sandbox: the trace's bookkeeping was tampered "
                              f"with ({problem})")
        if res.stopped_by is not None or res.timed_out:
            res.reads = None  # a trace cut short read only part of what it would have
        return res


def _give_to(host: Path, uid: int) -> None:
    """The trace directory owned by the sandbox's unprivileged ``uid`` (links not followed)."""
    for dirpath, dirnames, filenames in os.walk(host):
        for n in (*dirnames, *filenames):
            with contextlib.suppress(OSError):
                os.lchown(os.path.join(dirpath, n), uid, uid)
    os.chown(host, uid, uid)


def _rmtree(p: Path) -> None:
    """Remove a trace directory, whatever permissions the script left on it."""
    shutil.rmtree(p, ignore_errors=True)
    if p.exists():  # read-only directories (the repository copy, a script's chmod)
        for dirpath, dirnames, _ in os.walk(p):
            for d in dirnames:
                full = os.path.join(dirpath, d)
                if not os.path.islink(full):
                    with contextlib.suppress(OSError):
                        os.chmod(full, 0o755)
        with contextlib.suppress(OSError):
            p.chmod(0o755)
        shutil.rmtree(p, ignore_errors=True)


def trace_script(
    repo: Path, script_rel: str, env: dict[str, str], *, timeout: float = 60.0,
    isolate: bool | None = None, keep: bool = False, allow_unsandboxed: bool = False,
    clients: Mapping[str, Iterable[str]] | None = None,
) -> TraceResult:
    """Run ``repo/script_rel`` in a fresh one-trace session with exactly ``env``
    (``clients``: see :class:`Session`)."""
    with Session(repo, isolate=isolate, keep=keep, allow_unsandboxed=allow_unsandboxed,
                 clients=clients) as s:
        return s.trace(script_rel, env, timeout=timeout)
