"""Reuse of trace results across runs, keyed by what a trace read.

A trace's result is a function of its arguments (script, environment, stops, mounts,
timeout, the session's limits and benchmark clients), of ixtool's sandbox code, of the
host's system files, and of the repository files it read.  With namespaces the trace
server records the last (:class:`~.trace.ReadSet`: files looked up, directories listed,
paths found missing), so a result can be reused on another tree whenever that tree holds
the same bytes at every path the trace read:

* every file of ``files``: the same kind, executable bit and content (a symbolic link:
  the same target);
* every directory of ``listed``: the same entries (names and kinds);
* every path of ``missing``: still missing.

A trace that read something else would not have read the same: the first path that
differs is among those it read, so a tree that matches every recorded path gives the
trace the same inputs, path for path, and (the sandbox being deterministic up to
scheduling) the same result.  Nothing else is reused: a trace with no read set (no
namespaces, a trace the sandbox stopped) is never stored, nor a failed one (a failure
could be a scheduling accident; it is run again).

The store is a directory: one folder per key (:func:`trace_key`), one JSON file per
read set seen under it (the newest :data:`MAX_VARIANTS` are tried).  Writes are atomic
(a temporary file renamed); a file that does not parse is a miss.  A run that must not
leave anything (a pull request's untrusted head in a shared cache) opens it read-only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

FORMAT = 1
MAX_VARIANTS = 16  # read sets tried per key, newest first
MAX_ENTRY_BYTES = 8 << 20


@cache
def sandbox_digest() -> str:
    """The sandbox's own code (every file of this package): a change to it is a new key."""
    h = hashlib.sha256()
    here = Path(__file__).parent
    for p in sorted(here.iterdir()):
        if p.is_file() and p.suffix == ".py":
            h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


@cache
def host_digest() -> str:
    """What of the host a trace sees besides the repository: the system's release, the
    shell and the Python interpreter the traces run (path, size, modification time)."""
    h = hashlib.sha256()
    h.update(f"{platform.release()}\0{sys.version}\0".encode())
    with contextlib.suppress(OSError):
        h.update(Path("/etc/os-release").read_bytes())
    for tool in ("/bin/bash", "/usr/bin/bash", "/usr/bin/python3", "/usr/bin/env"):
        with contextlib.suppress(OSError):
            st = os.stat(tool)
            h.update(f"{tool}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


def trace_key(**parts: Any) -> str:
    """The key of a trace: its arguments (JSON-encodable), the sandbox's code and the
    host (:func:`sandbox_digest`, :func:`host_digest`)."""
    blob = json.dumps({"format": FORMAT, "sandbox": sandbox_digest(), "host": host_digest(),
                       **parts}, sort_keys=True, default=list)
    return hashlib.sha256(blob.encode()).hexdigest()


class TreeDigests:
    """Digests of one repository tree's paths (relative to ``root``), each computed once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._paths: dict[str, str] = {}
        self._lists: dict[str, str] = {}
        self._lock = threading.Lock()

    def _memo(self, table: dict[str, str], rel: str, make: Callable[[str], str]) -> str:
        with self._lock:
            got = table.get(rel)
        if got is None:
            got = make(rel)
            with self._lock:
                table[rel] = got
        return got

    def path(self, rel: str) -> str:
        """``-`` missing; ``d`` a directory; ``l:<target>`` a link; ``f<x>:<sha>`` a file
        (``x`` its executable bit); ``?`` anything else."""
        return self._memo(self._paths, rel, self._path)

    def listing(self, rel: str) -> str:
        """A directory's entries (name and kind), hashed; ``-`` when it is not one."""
        return self._memo(self._lists, rel, self._listing)

    def _full(self, rel: str) -> str:
        return os.path.join(self.root, rel) if rel else str(self.root)

    def _path(self, rel: str) -> str:
        full = self._full(rel)
        try:
            st = os.lstat(full)
        except OSError:
            return "-"
        if stat.S_ISLNK(st.st_mode):
            return "l:" + os.readlink(full)
        if stat.S_ISDIR(st.st_mode):
            return "d"
        if not stat.S_ISREG(st.st_mode):
            return "?"
        h = hashlib.sha256()
        with open(full, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return f"f{1 if st.st_mode & 0o111 else 0}:{h.hexdigest()}"

    def _listing(self, rel: str) -> str:
        try:
            with os.scandir(self._full(rel)) as it:
                items = sorted(f"{e.name}\0{_kind(e)}" for e in it)
        except OSError:
            return "-"
        return hashlib.sha256("\n".join(items).encode()).hexdigest()


def _reads_of(files: Iterable[str], listed: Iterable[str], missing: Iterable[str],
              tree: TreeDigests) -> dict[str, Any]:
    return {"files": {p: tree.path(p) for p in sorted(files)},
            "listed": {p: tree.listing(p) for p in sorted(listed)},
            "missing": sorted(missing)}


def matches(reads: Mapping[str, Any], tree: TreeDigests) -> bool:
    """Does ``tree`` hold what a trace read (a stored entry's ``reads``)?"""
    try:
        return all(tree.path(p) == d for p, d in reads["files"].items()) and \
            all(tree.listing(p) == d for p, d in reads["listed"].items()) and \
            all(tree.path(p) == "-" for p in reads["missing"])
    except (KeyError, TypeError, AttributeError, ValueError):
        return False


class TraceCache:
    """A directory of reusable trace results (module docstring)."""

    def __init__(self, directory: Path, *, writable: bool = True) -> None:
        self.dir = Path(directory)
        self.writable = writable
        # traces reused / not found / kept (``counts``: the same, one live dict)
        self.counts = {"hits": 0, "misses": 0, "stored": 0}
        self._lock = threading.Lock()
        if writable:
            self.dir.mkdir(parents=True, exist_ok=True)

    def _folder(self, key: str) -> Path:
        return self.dir / key[:2] / key

    def lookup(self, key: str, tree: TreeDigests) -> dict[str, Any] | None:
        """The stored entry (``reads``: path → digest; ``result``) of a trace with this
        key that read what ``tree`` holds."""
        folder = self._folder(key)
        try:
            entries = sorted(folder.iterdir(), key=_mtime, reverse=True)[:MAX_VARIANTS]
        except OSError:
            entries = []
        for entry in entries:
            data = _load(entry)
            if data is not None and matches(data["reads"], tree):
                with self._lock:
                    self.counts["hits"] += 1
                return data
        with self._lock:
            self.counts["misses"] += 1
        return None

    def store(self, key: str, result: Mapping[str, Any], files: Iterable[str],
              listed: Iterable[str], missing: Iterable[str], tree: TreeDigests) -> None:
        """Keep ``result`` (JSON) under ``key`` for trees that hold what it read."""
        if not self.writable:
            return
        reads = _reads_of(files, listed, missing, tree)
        blob = json.dumps({"format": FORMAT, "reads": reads, "result": result},
                          sort_keys=True).encode()
        if len(blob) > MAX_ENTRY_BYTES:
            return
        name = hashlib.sha256(json.dumps(reads, sort_keys=True).encode()).hexdigest()[:32]
        folder = self._folder(key)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(blob)
                os.replace(tmp, folder / f"{name}.json")
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError:
            return  # a full or read-only disk: the run goes on without it
        with self._lock:
            self.counts["stored"] += 1


def _kind(e: os.DirEntry[str]) -> str:
    return "l" if e.is_symlink() else "d" if e.is_dir(follow_symlinks=False) else "f"


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def _load(entry: Path) -> dict[str, Any] | None:
    if entry.name.startswith(".") or entry.suffix != ".json":
        return None
    try:
        if entry.stat().st_size > MAX_ENTRY_BYTES:
            return None
        data = json.loads(entry.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT or \
            not isinstance(data.get("reads"), dict) or not isinstance(data.get("result"), dict):
        return None
    return data
