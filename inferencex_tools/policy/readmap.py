"""What each row's launch read, recorded by the whole check, used by ``--base``.

The whole check of a committed tree (``policy check --trace-cache DIR`` on a clean
checkout) keeps, next to its traces, the **read map** of that tree: for every row it
built, the repository paths its jobs' traces read (:class:`~inferencex_tools.sandbox.
ReadSet`: files, directory listings, paths found missing; every trace of every job of the
row, shared or reused, the static submission included) plus the files the check itself
read to judge it (the script's text, a submitted recipe).  A row is *unknown* (``None``)
when one of its jobs has no trace or a trace without a read set (bubblewrap, a trace the
sandbox stopped), or when a job was not traced at all.

``--base`` (the gate) loads the map of its merge-base's tree, made by the same ixtool
code on the same host; each row of the map is then a proof.  A change reaches a known
row exactly when it touches what the row's launch read:

* a changed path the row read (a file, a symbolic link or its target);
* a changed path at or below a path the row found missing;
* an added or deleted path directly in a directory the row listed, or one that changes
  kind there (a file becomes a directory);
* a deleted path below a directory the row looked up that no longer exists.

Anything else cannot change what the row's traces saw, so a known row that none of this
touches is not traced, whatever names the scripts' text spells; a known row it touches
is traced, whatever the text says.  An unknown row, or a tree without a map, is left to
the static reach (:mod:`.reach`).  What the check decides by role — a row's config
block, its runner label, its curves, the workflows' job — is decided as before.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

FORMAT = 1
MAX_MAP_BYTES = 64 << 20


@cache
def code_digest() -> str:
    """ixtool's own code (every Python file of the package) and the host the traces ran
    on: a map is used only by the code that made it."""
    from inferencex_tools.sandbox import host_digest

    h = hashlib.sha256(host_digest().encode())
    pkg = Path(__file__).resolve().parent.parent
    for p in sorted(pkg.rglob("*.py")):
        h.update(str(p.relative_to(pkg)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:32]


def row_id(key: str, matrix: Mapping[str, Any], eval_only: bool) -> str:
    """A row of a tree: its config key and its job of the generator's matrix."""
    blob = json.dumps([key, matrix, eval_only], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


@dataclass
class RowReads:
    """What one row's launch read (repository paths)."""

    files: set[str] = field(default_factory=set)
    listed: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)

    def add(self, files: Iterable[str] = (), listed: Iterable[str] = (),
            missing: Iterable[str] = ()) -> None:
        self.files.update(files)
        self.listed.update(listed)
        self.missing.update(missing)


def _ancestors(path: str) -> list[str]:
    """``a/b/c`` → ``["a/b", "a", ""]`` (the root is ``""``)."""
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(len(parts) - 1, -1, -1)]


@dataclass
class ChangeShape:
    """The change as the read map needs it: the changed paths, the directories whose
    entries it adds or removes (→ the changed paths that do it) and the directories it
    removes."""

    changed: set[str]
    relisted: dict[str, set[str]]
    gone: dict[str, set[str]]

    def touches(self, r: RowReads) -> set[str]:
        """The changed paths that reach what ``r`` read (module docstring)."""
        out = self.changed & r.files
        for p in self.changed:  # (not only added paths: the sandbox's copy leaves out a
            # file over its size limit and a link leaving the tree, so a trace can find
            # missing what git has)
            if p in r.missing or any(a in r.missing for a in _ancestors(p) if a):
                out.add(p)
        for d in self.relisted.keys() & r.listed:
            out |= self.relisted[d]
        for d in self.gone.keys() & r.files:
            out |= self.gone[d]
        return out


class ReadMap:
    """One tree's read map: row id → what it read (None: unknown)."""

    def __init__(self, rows: Mapping[str, RowReads | None], keys: Mapping[str, str]) -> None:
        self.rows = dict(rows)
        self.keys = dict(keys)  # row id → config key

    def touched(self, change: ChangeShape) -> dict[str, set[str]]:
        """Known rows the change reaches → the changed paths that reach them."""
        out: dict[str, set[str]] = {}
        for rid, r in self.rows.items():
            if r is not None:
                hit = change.touches(r)
                if hit:
                    out[rid] = hit
        return out

    def to_json(self) -> dict[str, Any]:
        paths: dict[str, int] = {}

        def ids(items: Iterable[str]) -> list[int]:
            return sorted(paths.setdefault(p, len(paths)) for p in items)

        rows = {rid: None if r is None else [ids(r.files), ids(r.listed), ids(r.missing)]
                for rid, r in sorted(self.rows.items())}
        return {"format": FORMAT, "paths": list(paths), "rows": rows, "keys": self.keys}

    @classmethod
    def from_json(cls, d: Any) -> ReadMap | None:
        try:
            if d.get("format") != FORMAT:
                return None
            paths = [str(p) for p in d["paths"]]
            rows: dict[str, RowReads | None] = {}
            for rid, v in d["rows"].items():
                rows[str(rid)] = None if v is None else RowReads(
                    {paths[i] for i in v[0]}, {paths[i] for i in v[1]},
                    {paths[i] for i in v[2]})
            return cls(rows, {str(k): str(v) for k, v in d["keys"].items()})
        except (AttributeError, KeyError, TypeError, IndexError, ValueError):
            return None


def map_path(cache_dir: Path, tree: str) -> Path:
    return cache_dir / "readmaps" / code_digest() / f"{tree}.json"


def save(cache_dir: Path, tree: str, m: ReadMap) -> None:
    from inferencex_tools.io.files import atomic_write

    p = map_path(cache_dir, tree)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(p, json.dumps(m.to_json(), separators=(",", ":")).encode())
    except OSError:
        return  # a full or read-only disk: the next gate goes without it


def load(cache_dir: Path, tree: str) -> ReadMap | None:
    p = map_path(cache_dir, tree)
    try:
        if p.stat().st_size > MAX_MAP_BYTES:
            return None
        return ReadMap.from_json(json.loads(p.read_bytes()))
    except (OSError, ValueError):
        return None


def change_shape(root: Path, changed: Iterable[str], at_base: set[str],
                 at_head_paths: set[str] | None = None) -> ChangeShape:
    """``at_base``: every file path of the base tree; the head is ``at_head_paths`` (every
    file path of the head commit) or, without, the checkout at ``root``."""
    base_dirs = {a for p in at_base for a in _ancestors(p)}
    head_dirs = {a for p in at_head_paths or () for a in _ancestors(p)}

    def at_head(p: str) -> str | None:
        if at_head_paths is not None:
            return "f" if p in at_head_paths else "d" if p in head_dirs else None
        full = root / p
        if not os.path.lexists(full):
            return None
        return "d" if full.is_dir() and not full.is_symlink() else "f"

    files = set(changed)
    relisted: dict[str, set[str]] = {}
    gone: dict[str, set[str]] = {}
    for p in files:
        parts = p.split("/")
        for i in range(len(parts)):
            d, c = "/".join(parts[:i]), "/".join(parts[:i + 1])
            was, now = "f" if c in at_base else "d" if c in base_dirs else None, at_head(c)
            if was != now:  # an entry of d appears, goes or changes kind
                relisted.setdefault(d, set()).add(p)
                if was == "d" or (was and not now):  # c and every directory below it
                    # on the way to p went
                    for a in [c, *(x for x in _ancestors(p) if x.startswith(c + "/"))]:
                        gone.setdefault(a, set()).add(p)
                        if a != p:  # a directory gone: its entries gone with it
                            relisted.setdefault(a, set()).add(p)
                break
    return ChangeShape(files, relisted, gone)


def known_reads(traces: Iterable[Any], judged: Iterable[str], root: Path,
                into: RowReads) -> bool:
    """Add what ``traces`` (TraceResults) read and the files the check read to judge them
    (``judged``, repository paths) to ``into``; False when a trace's reads are unknown."""
    for tr in traces:
        if tr.reads is None:
            return False
        into.add(tr.reads.files, tr.reads.listed, tr.reads.missing)
    for path in judged:
        if os.path.lexists(root / path):
            into.files.add(path)
        else:
            into.missing.add(path)
    return True
