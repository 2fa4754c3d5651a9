"""One metavar vocabulary for every command's help: FILE, DIR, N, SECONDS, REF,
OWNER/NAME, KEY, … (upper case, the same word for the same thing), set on the built
click tree for the options and arguments that do not name their own."""

from __future__ import annotations

from typing import Any

from typer import _click as click
from typer._types import TyperChoice
from typer.core import TyperArgument, TyperGroup, TyperOption

# option or argument name → metavar, where the name alone does not say it
BY_NAME = {
    "base": "REF", "head": "REF", "repo": "OWNER/NAME", "repo_slug": "OWNER/NAME",
    "pr": "N", "pr_number": "N", "run_id": "ID", "row_id": "ID", "id": "ID",
    "config_key": "KEY", "config_keys": "KEY...", "key": "KEY", "labels_json": "JSON",
    "criteria_json": "JSON", "row": "JSON", "set_env": "KEY=VALUE", "assignments": "VAR=VALUE",
    "root": "DIR", "workspace": "DIR", "out_dir": "DIR", "curves_dir": "DIR",
    "scripts_dir": "DIR", "remote": "NAME", "api_url": "URL", "event_name": "NAME",
    "label": "LABEL", "labels": "LABEL...", "node": "RUNNER", "runner": "RUNNER",
    "allow_runner": "LABEL", "policy": "FILE", "priority": "POLICY", "changelog": "FILE",
    "time_limit": "HH:MM:SS", "partition": "NAME", "account": "NAME", "scheduler": "NAME",
    "queue_namespace": "NAME", "model": "MODEL", "draft": "DRAFT", "method": "METHOD",
    "sample": "METHOD", "area": "AREA", "pr_side": "ours|theirs",
}
_SECONDS = ("timeout", "interval", "poll")


def _for_type(param: Any) -> str | None:
    name = param.name or ""
    ptype = param.type
    if isinstance(ptype, TyperChoice):
        return None  # the choices themselves: <text|json|…>
    if isinstance(ptype, click.types.IntParamType):
        return "N"
    if isinstance(ptype, click.types.FloatParamType):
        return "SECONDS" if any(s in name for s in _SECONDS) else "NUMBER"
    if type(ptype).__name__ == "TyperPath":
        return "FILE"
    return name.upper().replace("_", "-") or None


def metavar_for(param: Any) -> str | None:
    """The metavar ``param`` should show (None: leave it as it is)."""
    if getattr(param, "is_flag", False) or param.metavar is not None \
            or type(param.type).__name__ == "BoolParamType":
        return None
    name = param.name or ""
    meta = BY_NAME.get(name) or _for_type(param)
    if meta and isinstance(param, TyperArgument) and param.nargs != 1 \
            and not meta.endswith("..."):
        meta += "..."
    return meta


def normalize(command: Any, *, deep: bool = True) -> None:
    """Give every option and argument of ``command`` — with ``deep``, of every command
    below it too — its metavar (idempotent)."""
    for param in command.params:
        if isinstance(param, TyperOption | TyperArgument):
            meta = metavar_for(param)
            if meta:
                param.metavar = meta
    if deep and isinstance(command, TyperGroup):
        for sub in command.commands.values():
            normalize(sub)
