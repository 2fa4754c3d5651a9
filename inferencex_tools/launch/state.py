"""The submitted-jobs state file (JSON, ``schemas/launch-state.schema.json``).

Written atomically after every submission and every status refresh, so an
interrupted ``submit`` leaves a file that lists exactly the jobs sbatch took.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from inferencex_tools.errors import InputError
from inferencex_tools.io.files import atomic_write, read_bytes

VERSION = 1


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_state(scheduler: str, workspace: str, out_dir: str) -> dict[str, Any]:
    return {"version": VERSION, "scheduler": scheduler, "created": now(),
            "workspace": workspace, "out-dir": out_dir, "jobs": []}


def save(path: Path, state: dict[str, Any]) -> None:
    state["updated"] = now()
    atomic_write(path, (json.dumps(state, indent=2) + "\n").encode("utf-8"))


def load(path: Path) -> dict[str, Any]:
    from inferencex_tools.schemas import schema_issues

    raw = read_bytes(path)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a launch state file ({exc})",
                         hint="pass the state.json written by `ixtool launch submit`") from None
    issues = schema_issues("launch-state", data)
    if issues:
        where = issues[0].where or "(root)"
        raise InputError(f"{path}: invalid launch state at {where}: {issues[0].detail}",
                         hint="the file is written by `ixtool launch submit`; do not edit it")
    state: dict[str, Any] = data
    return state
