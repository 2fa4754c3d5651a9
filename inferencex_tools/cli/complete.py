"""Shell completion of the names people mistype: config keys, runner labels and nodes,
PR labels, rule ids and areas (``ixtool --install-completion``).

Each function is a Typer ``autocompletion`` callback: it gets the partly parsed context
and the word being completed and returns the candidates that start with it, with a
description where one exists (zsh and fish show it).  They run on every <TAB>, so they
read as little as possible, lazily: the top-level names of ``configs/*-master.yaml`` and
``configs/runners.yaml`` are found by a line scan (no YAML parse), of the repository the
command line names (``--root``/``--configs``/``--runner-config``) or the one around the
current directory.  Any error is no candidates: completion never fails a shell.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

# A mapping key that starts a line: ``dsr1-fp8-h200-sglang:``, ``cluster:h200-dgxc:`` (a
# plain scalar; not a comment, a list item or a quoted key), with its indentation.
_KEY = re.compile(r"""^([ ]*)([^\s#'"\-](?:[^\s:]|:(?=\S))*)[ \t]*:(?:[ \t]|$)""", re.M)
_ITEM = re.compile(r"""^([ ]*)-[ \t]+['"]?([A-Za-z0-9][\w.:-]*)['"]?[ \t]*(?:#.*)?$""", re.M)
_MAX_BYTES = 32 * 1024 * 1024


def _text(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            return fh.read(_MAX_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


def top_level_names(path: Path) -> list[str]:
    """The top-level keys of a YAML mapping file, in file order (a line scan)."""
    return [k for ind, k in _KEY.findall(_text(path)) if not ind]


def _section(text: str, name: str) -> str:
    """The lines below the top-level key ``name`` (up to the next top-level line)."""
    m = re.search(rf"^{re.escape(name)}[ \t]*:[^\n]*\n", text, re.M)
    if m is None:
        return ""
    end = re.search(r"^[^\s#]", text[m.end():], re.M)
    return text[m.end():m.end() + end.start()] if end else text[m.end():]


def _root(ctx: Any) -> Path:
    """The repository the command works on: ``--root`` when given, else the current
    directory when it has ``configs/``, else the git work tree around it."""
    given = (getattr(ctx, "params", None) or {}).get("root")
    if given:
        return Path(given)
    here = Path.cwd()
    if (here / "configs").is_dir():
        return here
    for d in here.parents:
        if (d / ".git").exists():
            return d
    return here


def _given(ctx: Any, *names: str) -> list[Path]:
    params = getattr(ctx, "params", None) or {}
    for name in names:
        value = params.get(name)
        if value:
            return [Path(v) for v in (value if isinstance(value, list | tuple) else [value])]
    return []


def _starting(names: list[str], incomplete: str) -> list[str]:
    return sorted({n for n in names if n.startswith(incomplete)})


def config_keys(ctx: Any, incomplete: str) -> list[str]:
    """Top-level keys of the master configs (``--configs``, else ``configs/*-master.yaml``)."""
    try:
        files = _given(ctx, "configs", "config_files") or sorted(
            (_root(ctx) / "configs").glob("*-master.yaml"))
        return _starting([k for f in files for k in top_level_names(f)], incomplete)
    except Exception:  # completion never fails the shell
        return []


def _runners(ctx: Any) -> Path:
    given = _given(ctx, "runner_config", "runners")
    return given[0] if given else _root(ctx) / "configs" / "runners.yaml"


def _labels_section(ctx: Any) -> str:
    return _section(_text(_runners(ctx)), "labels")


def runner_labels(ctx: Any, incomplete: str) -> list[str]:
    """Runner labels: the keys of ``labels:`` in ``configs/runners.yaml``."""
    try:
        keys = _KEY.findall(_labels_section(ctx))
        depth = min((len(ind) for ind, _ in keys), default=0)
        return _starting([k for ind, k in keys if len(ind) == depth], incomplete)
    except Exception:
        return []


def runner_nodes(ctx: Any, incomplete: str) -> list[str]:
    """Concrete runner nodes: the node names listed under the labels of runners.yaml."""
    try:
        return _starting([n for _, n in _ITEM.findall(_labels_section(ctx))], incomplete)
    except Exception:
        return []


def pr_labels(incomplete: str) -> list[tuple[str, str]]:
    """The PR labels ixtool acts on, with what each does."""
    from inferencex_tools.ci.labels import LABEL_HELP

    return [(name, text) for name, text in sorted(LABEL_HELP.items())
            if name.startswith(incomplete)]


def rule_ids(incomplete: str) -> list[tuple[str, str]]:
    """Rule ids (``CL502``…) with their summary; case-insensitive prefix."""
    from inferencex_tools.report.findings import all_rules

    up = incomplete.upper()
    case = str.lower if incomplete and incomplete == incomplete.lower() else str.upper
    return [(case(r.id), r.summary) for r in sorted(all_rules(), key=lambda r: r.id)
            if r.id.startswith(up)]


def rule_areas(incomplete: str) -> list[str]:
    from inferencex_tools.report.findings import all_rules

    return _starting([r.area for r in all_rules()], incomplete)

