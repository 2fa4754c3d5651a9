"""Reading and writing the adoption files: ``[tool.ixtool]`` settings (``.ixtool.toml`` or
``pyproject.toml``) and baseline files.  What they mean is :mod:`report.adopt`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from inferencex_tools.errors import InputError
from inferencex_tools.io.layout import repo_root
from inferencex_tools.report.adopt import Settings

SETTINGS_FILE = ".ixtool.toml"
PYPROJECT = "pyproject.toml"


def _toml(path: Path) -> dict[str, Any]:
    import tomllib

    from inferencex_tools.io.files import read_bytes

    try:
        data: dict[str, Any] = tomllib.loads(read_bytes(path).decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid TOML: {exc}",
                         hint="fix the file (docs/configuration.md)") from None
    return data


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
            data = _toml(own)
            table = data.get("tool", {}).get("ixtool", data) if "tool" in data else data
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
    from inferencex_tools.schemas import schema_issues

    try:
        doc = json.loads(read_bytes(path).decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a baseline file (invalid JSON: {exc})",
                         hint="write one with --write-baseline") from None
    issues = schema_issues("ixtool-baseline", doc)
    if issues:
        raise InputError(f"{path}: not a baseline file: {issues[0].message}",
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
