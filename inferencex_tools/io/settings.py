"""Reading and writing the adoption files: ``[tool.ixtool]`` settings (``.ixtool.toml`` or
``pyproject.toml``) and baseline files.  What they mean is :mod:`report.adopt`.

Two places to read them from: the working tree (:func:`find_settings`, a local run) and a
revision's git blobs (:func:`trusted_view`, every PR context: the settings that judge a
change come from its base, never from the change; docs/security.md).
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferencex_tools.errors import InputError, IxtoolError
from inferencex_tools.io.layout import repo_root
from inferencex_tools.report.adopt import Settings, TrustedBase

if TYPE_CHECKING:
    from inferencex_tools.io.gitcat import GitReader

SETTINGS_FILE = ".ixtool.toml"
PYPROJECT = "pyproject.toml"
DEFAULT_BASELINE = ".ixtool-baseline.json"


def _toml(path: Path) -> dict[str, Any]:
    from inferencex_tools.io.files import read_bytes

    return _toml_text(read_bytes(path), str(path))


def _toml_text(raw: bytes, where: str) -> dict[str, Any]:
    import tomllib

    try:
        data: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{where}: not valid TOML: {exc}",
                         hint="fix the file (docs/configuration.md)") from None
    return data


def _own_table(data: dict[str, Any]) -> Any:
    """The settings table of a ``.ixtool.toml`` (top level, or its ``[tool.ixtool]``)."""
    return data.get("tool", {}).get("ixtool", data) if "tool" in data else data


def _checked(table: Any, where: str) -> dict[str, Any]:
    from inferencex_tools.schemas import schema_issues

    if not isinstance(table, dict):
        raise InputError(f"{where}: must be a table", hint="see docs/configuration.md")
    issues = schema_issues("ixtool-config", table)
    if issues:
        i = issues[0]
        at = ".".join(str(p) for p in i.path) or "(table)"
        raise InputError(f"{where}: {at}: {i.message}",
                         hint="see schemas/ixtool-config.schema.json and "
                         "docs/configuration.md")
    return table


def find_settings(start: Path) -> tuple[Settings, Path | None]:
    """The settings that apply at ``start``: the nearest ``.ixtool.toml``, or
    ``pyproject.toml`` with a ``[tool.ixtool]`` table, from ``start`` up to the repository
    root; (empty settings, None) when there is none.  Returns the directory the file is
    in (repository-relative paths in it are relative to that directory)."""
    top = repo_root(start)
    here = start.resolve()
    stop = top.resolve() if top is not None else here
    for d in (here, *here.parents):
        own = d / SETTINGS_FILE
        if own.is_file():
            table = _own_table(_toml(own))
            return Settings.from_mapping(_checked(table, str(own)), str(own)), d
        py = d / PYPROJECT
        if py.is_file():
            data = _toml(py)
            tool = data.get("tool")
            if isinstance(tool, dict) and "ixtool" in tool:
                return (Settings.from_mapping(_checked(tool["ixtool"], f"{py} [tool.ixtool]"),
                                              f"{py} [tool.ixtool]"), d)
        if d == stop:
            break
    return Settings(), None


def read_baseline(path: Path) -> dict[str, Any]:
    """A baseline file, checked against ``schemas/ixtool-baseline.schema.json``."""
    from inferencex_tools.io.files import read_bytes

    return _baseline_doc(read_bytes(path), str(path))


def _baseline_doc(raw: bytes, where: str) -> dict[str, Any]:
    from inferencex_tools.schemas import schema_issues

    try:
        doc = json.loads(raw.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{where}: not a baseline file (invalid JSON: {exc})",
                         hint="write one with --write-baseline") from None
    issues = schema_issues("ixtool-baseline", doc)
    if issues:
        raise InputError(f"{where}: not a baseline file: {issues[0].message}",
                         hint="write one with --write-baseline")
    return dict(doc)


def write_baseline(path: Path, doc: dict[str, Any]) -> None:
    from inferencex_tools.io.files import atomic_write

    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode())
    except OSError as exc:
        raise InputError(f"{path}: cannot write the baseline: {exc.strerror}",
                         hint="check that its directory exists and is writable") from None


def relpath_from(root: Path | None, cwd: Path) -> Any:
    """A function mapping a finding's file (relative to ``cwd`` or absolute) to a
    ``root``-relative slash path (unchanged when outside ``root`` or not a path)."""
    base = (root or cwd).resolve()
    here = cwd.resolve()

    def rel(file: str) -> str:
        if not file:
            return file
        p = Path(file)
        full = Path(os.path.normpath(p if p.is_absolute() else here / p))
        try:
            return full.relative_to(base).as_posix()
        except ValueError:
            return file
    return rel


# ------------------------------------------------------------------ PR contexts (base)

@dataclass(frozen=True)
class Side:
    """The settings and the baseline as one side of a change has them."""

    settings: Settings
    baseline: dict[str, Any] | None = None  # the parsed baseline document, None: none
    baseline_file: str | None = None  # repository-relative (or as given), for messages
    error: str | None = None  # the side's files do not load (the PR side only)


@dataclass(frozen=True)
class TrustedView:
    """What applies in a PR context: the base side (the base revision's blobs — the
    revision the PR goes into, never a fork point the PR chooses; None when it cannot be
    read, and then nothing applies), and the PR side and its fork point (the merge-base)
    for what the PR changed."""

    base: Side | None
    head: Side
    ref: str | None  # the base revision read
    root: Path
    problem: str | None = None  # why the base could not be read
    fork: Side | None = None  # the merge-base's side (what the PR's edits are against)


def _read_side(read: Callable[[str], bytes | None], start: str, label: str,
               explicit: str | None, disk: Callable[[str], bytes | None]) -> Side:
    """Settings (nearest ``.ixtool.toml`` or ``[tool.ixtool]`` from ``start`` up to the
    root) and baseline through ``read`` (repository-relative path → bytes); a baseline
    path that leaves the repository is read through ``disk``."""
    settings, sdir = Settings(), None
    parts = [p for p in start.split("/") if p not in ("", ".")]
    for i in range(len(parts), -1, -1):
        d = "/".join(parts[:i])
        own, py = (posixpath.join(d, n) for n in (SETTINGS_FILE, PYPROJECT))
        raw = read(own)
        if raw is not None:
            where = f"{own}@{label}"
            settings = Settings.from_mapping(
                _checked(_own_table(_toml_text(raw, where)), where), own)
            sdir = d
            break
        raw = read(py)
        tool = _toml_text(raw, f"{py}@{label}").get("tool") if raw is not None else None
        if isinstance(tool, dict) and "ixtool" in tool:
            where = f"{py} [tool.ixtool]"
            settings = Settings.from_mapping(_checked(tool["ixtool"], f"{where}@{label}"),
                                             where)
            sdir = d
            break
    rel = explicit
    if rel is None and settings.baseline and sdir is not None:
        rel = posixpath.normpath(posixpath.join(sdir, settings.baseline))
    rel = rel or DEFAULT_BASELINE
    raw = disk(rel) if rel.startswith(("/", "../")) else read(rel)
    doc = _baseline_doc(raw, f"{rel}@{label}") if raw is not None else None
    return Side(settings, doc, rel if doc is not None else None)


def _loaded(fn: Callable[[], Side]) -> Side:
    """The PR side: a file that does not load is a change too, never an error."""
    try:
        return fn()
    except InputError as exc:
        return Side(Settings(), error=exc.message)


def trusted_view(here: Path, trusted: TrustedBase, baseline: Path | None = None
                 ) -> TrustedView:
    """The settings and baseline at the merge-base of ``trusted.ref`` and the head (the
    base side, which applies) and on the PR side (the working tree, or the blobs of
    ``trusted.head``), read from ``here``.  ``baseline``: an explicit ``--baseline``
    (inside the repository it is read at each side's revision, else from disk)."""
    from inferencex_tools.io.gitcat import GitReader

    def disk(rel: str) -> bytes | None:
        from inferencex_tools.io.files import read_bytes

        p = Path(rel)
        return read_bytes(p) if p.is_file() else None

    try:
        reader: GitReader | None = GitReader(here)
    except IxtoolError as exc:
        reader, problem = None, exc.message
    root = reader.root if reader is not None else (repo_root(here) or here)
    start = _relative(here, root)
    explicit = _relative(baseline, root, keep_outside=True) if baseline else None
    try:
        head = _loaded(lambda: _tree_side(root, start, explicit, disk)
                       if trusted.head is None or reader is None
                       else _blob_side(reader, reader.resolve(trusted.head), start, explicit,
                                       disk))
        if reader is None:
            return TrustedView(None, head, None, root, problem)
        try:
            if trusted.ref is None:
                raise InputError("the event names no base revision",
                                 hint="a pull_request or merge_group payload names its base")
            # what applies: the base revision itself; a PR forks wherever it likes on
            # main's history, so the merge-base only says what the PR changed
            ref = reader.resolve(trusted.ref)
            fork = reader.merge_base(ref, trusted.head or "HEAD")
        except IxtoolError as exc:
            return TrustedView(None, head, None, root, exc.message)
        base = _blob_side(reader, ref, start, explicit, disk)
        return TrustedView(base, head, ref, root, fork=base if fork == ref else _loaded(
            lambda: _blob_side(reader, fork, start, explicit, disk)))
    finally:
        if reader is not None:
            reader.close()


def _blob_side(reader: GitReader, ref: str, start: str, explicit: str | None,
               disk: Callable[[str], bytes | None]) -> Side:
    return _read_side(lambda rel: reader.blob(ref, rel)[0], start, ref[:12], explicit, disk)


def _tree_side(root: Path, start: str, explicit: str | None,
               disk: Callable[[str], bytes | None]) -> Side:
    from inferencex_tools.io.files import read_bytes

    def read(rel: str) -> bytes | None:
        p = root / rel
        return read_bytes(p) if p.is_file() else None

    return _read_side(read, start, "working tree", explicit, disk)


def _relative(path: Path, root: Path, *, keep_outside: bool = False) -> str:
    """``path`` relative to ``root`` as a slash path ("" for the root itself); outside
    the root: "" (or, with ``keep_outside``, the absolute path)."""
    full = Path(os.path.abspath(path))
    try:
        rel = full.relative_to(root.resolve()).as_posix()
    except ValueError:
        try:
            rel = full.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return str(full) if keep_outside else ""
    return "" if rel == "." else rel
