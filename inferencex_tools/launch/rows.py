"""Selections → matrix rows, through the sweep generator.

A *selection* is what a reviewer types: a config key, optionally one arm (the
N-th search-space entry of the key, 1-based, fixed-seq-len entries first, then
agentic ones, in file order) and concurrencies, plus the eval switch.  Rows
come from :func:`inferencex_tools.sweep.generate.generate` (``test-config``
semantics, no eval marking); each row is generated per arm so it can carry its
provenance (config key, arm) that the sweep rows themselves do not hold.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferencex_tools.errors import InputError, UsageError, key_hint
from inferencex_tools.io.layout import layout_of
from inferencex_tools.report.words import plural
from inferencex_tools.safetext import control_chars

if TYPE_CHECKING:
    from inferencex_tools.sweep.load import Configs, Runners

Row = dict[str, Any]

FIXED = "fixed-seq-len"
AGENTIC = "agentic-coding"


@dataclass
class Selection:
    """What to launch: a config key (+ arm, concurrencies) in throughput or eval mode."""

    config_key: str
    arm: int | None = None
    conc: list[int] | None = None
    eval: bool = False


@dataclass
class SelectedRow:
    """One matrix row plus where it came from (unknown for rows given as JSON)."""

    row: Row
    config_key: str | None = None
    arm: int | None = None
    eval: bool = False

    @property
    def eval_only(self) -> bool:
        return self.eval or bool(self.row.get("eval-only"))


@dataclass
class Arm:
    index: int  # 1-based
    scenario: str
    item: dict[str, Any]
    entry: dict[str, Any]


def arms_of(cfg: dict[str, Any]) -> list[Arm]:
    """The search-space entries of a config entry, numbered from 1."""
    out: list[Arm] = []
    scen = cfg.get("scenarios") or {}
    for name in (FIXED, AGENTIC):
        for item in scen.get(name) or []:
            for entry in item.get("search-space") or []:
                out.append(Arm(len(out) + 1, name, item, entry))
    return out


def _single_arm(cfg: dict[str, Any], arm: Arm) -> dict[str, Any]:
    """A copy of ``cfg`` whose only search-space entry is ``arm``."""
    one = copy.deepcopy({k: v for k, v in cfg.items() if k != "scenarios"})
    item = {k: copy.deepcopy(v) for k, v in arm.item.items() if k != "search-space"}
    item["search-space"] = [copy.deepcopy(arm.entry)]
    one["scenarios"] = {arm.scenario: [item]}
    return one


def runners_file(root: Path) -> Path:
    return root / layout_of(root).runners


def load_configs(root: Path) -> tuple[Configs, Runners]:
    """(Configs, Runners) of the repository at ``root`` via the sweep loaders."""
    from inferencex_tools.sweep.load import Runners, load_masters, load_runners

    layout = layout_of(root)
    files = [root / p for p in layout.masters]
    if not files:
        from inferencex_tools.io.layout import no_master_configs

        raise no_master_configs(root, None)
    configs = load_masters(list(files))
    rf = root / layout.runners
    runners = load_runners(rf) if rf.exists() else Runners()
    return configs, runners


def rows_for(root: Path, sel: Selection) -> list[SelectedRow]:
    """The rows of ``sel``, in matrix order, each tagged with its arm."""
    from inferencex_tools.sweep.generate import SweepRequest, generate
    from inferencex_tools.sweep.load import Configs

    configs, runners = load_configs(root)
    if sel.config_key not in configs.data:
        raise InputError(f"config key {sel.config_key!r} not found in the master configs",
                         hint=key_hint([sel.config_key], configs.keys))
    cfg = configs.data[sel.config_key]
    from inferencex_tools.sweep.service import validate_for_generation

    # the generator assumes what the reference's validation checks (a real key with a
    # string kv-offload-backend crashed it): an input error naming the key instead
    validate_for_generation(Configs(data={sel.config_key: cfg},
                                    origin={sel.config_key: configs.origin.get(
                                        sel.config_key, "")}))
    arms = arms_of(cfg)
    if sel.arm is not None and not 1 <= sel.arm <= len(arms):
        raise UsageError(f"--arm {sel.arm}: {sel.config_key} has {plural(len(arms), 'arm')}",
                         hint="its only arm is --arm 1" if len(arms) == 1
                         else f"use --arm 1…{len(arms)} (ixtool sweep explain "
                         f"{sel.config_key} shows them)")
    out: list[SelectedRow] = []
    for arm in arms:
        if sel.arm is not None and arm.index != sel.arm:
            continue
        one = Configs(data={sel.config_key: _single_arm(cfg, arm)},
                      origin={sel.config_key: configs.origin.get(sel.config_key, "")})
        req = SweepRequest(mode="test", config_keys=[sel.config_key],
                           conc=list(sel.conc) if sel.conc else None, no_evals=True)
        for row in generate(one, runners, req):
            out.append(SelectedRow(row, sel.config_key, arm.index, sel.eval))
    return out


def eval_marked(root: Path, config_key: str) -> list[Row]:
    """The rows the sweep itself selects for evals (``test-config --evals-only``)."""
    from inferencex_tools.sweep.generate import SweepRequest, generate

    configs, runners = load_configs(root)
    req = SweepRequest(mode="test", config_keys=[config_key], evals_only=True)
    return generate(configs, runners, req)


def _as_rows(data: Any, source: str) -> list[Row]:
    if isinstance(data, dict) and not {"exp-name", "runner", "model", "image"} & set(data):
        # a bucket object (``sweep from-changelog``): flatten its row lists in order
        rows: list[Row] = []
        for v in data.values():
            if isinstance(v, list):
                rows.extend(r for r in v if isinstance(r, dict))
        return rows
    if isinstance(data, dict):
        return [data]
    if isinstance(data, list) and all(isinstance(r, dict) for r in data):
        return list(data)
    raise InputError(f"{source}: expected a matrix row (JSON object) or a list of rows",
                     hint="--row takes one row object as ixtool sweep prints it, or a list of rows")


def rows_from_json(text: str, source: str = "--row") -> list[SelectedRow]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: not valid JSON: {exc.msg} at line {exc.lineno} "
                         f"column {exc.colno}",
                         hint="--row takes JSON; quote it for the shell: "
                         "--row '{\"exp-name\": …}'") from None
    return [SelectedRow(r, eval=bool(r.get("eval-only"))) for r in _as_rows(data, source)]


def rows_from_matrix(path: Path) -> list[SelectedRow]:
    from inferencex_tools.io.files import read_bytes

    raw = read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text",
                         hint="pass the JSON that ixtool sweep printed (--matrix FILE)") from None
    return rows_from_json(text, str(path))


def reject_control_chars(rows: Iterable[SelectedRow]) -> None:
    """InputError when a row (or its config key) holds a control character: rows are
    checked before anything is rendered from them."""
    for i, sel in enumerate(rows, 1):
        hit = control_chars(sel.config_key or "", "config key") or control_chars(sel.row)
        if hit is not None:
            at, ch = hit
            name = str(sel.row.get("exp-name", ""))[:80] if isinstance(sel.row, dict) else ""
            raise InputError(
                f"row {i}{f' ({name!r})' if name else ''}: {at} contains the control "
                f"character {ch!r}",
                hint="rows, config keys and their values must be single-line printable text")


def filter_conc(rows: Iterable[SelectedRow], conc: list[int] | None) -> list[SelectedRow]:
    if not conc:
        return list(rows)
    want = set(conc)
    out = []
    for r in rows:
        c = r.row.get("conc")
        cs = set(c) if isinstance(c, list) else {c}
        if cs & want:
            out.append(r)
    return out
