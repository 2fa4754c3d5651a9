"""The rows ``policy check`` traces, taken from the sweep matrix itself.

Pure: master configs + runners → :class:`~.resolve.Row` objects whose ``matrix`` is the
row exactly as the sweep dispatches it (so the job environment derived from the
workflows is the real one).  Selection (docs/policy.md):

* single-node agentic points: every concurrency (throughput; G-01 also for
  ``spec-decoding: none``), plus ``EVAL_ONLY=true`` at the top concurrency of each
  search-space entry with spec-decoding (every concurrency with ``all_evals``);
* single-node fixed-seq-len points with spec-decoding: the top concurrency;
* multi-node points with spec-decoding: the top concurrency, plus an eval row for
  agentic points.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from typing import Any

from inferencex_tools.errors import InputError
from inferencex_tools.policy.resolve import Row, key_lines
from inferencex_tools.sweep.generate import Matrix, SweepRequest, generate_matrix
from inferencex_tools.sweep.load import Configs, Runners

AGENTIC = "agentic-coding"
_NOT_ENTRY = ("conc", "exp-name", "run-eval", "eval-only", "eval-conc", "eval-all-concs",
              "runner")


@dataclass
class RowSet:
    rows: list[Row] = field(default_factory=list)
    spec_keys: dict[str, tuple[str, int | None]] = field(default_factory=dict)  # key → place
    matched: set[str] = field(default_factory=set)  # config keys selected by the globs
    # config keys the sweep generator refuses (key → its reason): they have no rows; every
    # other key's rows are generated as if they were absent
    refused: dict[str, str] = field(default_factory=dict)


def _entry_id(row: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in row.items() if k not in _NOT_ENTRY}, sort_keys=True,
                      default=str)


def _conc(row: dict[str, Any]) -> int:
    c = row.get("conc")
    if isinstance(c, list):
        return int(max(c)) if c else 0
    return int(c or 0)


def _mk(row: dict[str, Any], key: str, cfg: dict[str, Any], file: str, line: int | None,
        index: int, *, eval_only: bool) -> Row:
    agentic = row.get("scenario-type") == AGENTIC
    matrix = dict(row)
    if eval_only:
        matrix.update({"run-eval": True, "eval-only": True})
        if isinstance(row.get("conc"), list):
            matrix["eval-conc"] = _conc(row)
    entry = {k: v for k, v in row.items() if k not in ("conc",)}
    return Row(config_file=file, key=key, key_line=line,
               scenario=AGENTIC if agentic else "fixed-seq-len", item_index=0,
               entry_index=index, conc=_conc(row), eval_only=eval_only, config=cfg,
               entry=entry, seq={"isl": row.get("isl"), "osl": row.get("osl")},
               dram_gb=int(row.get("total-cpu-dram-gb", 0) or 0), matrix=matrix)


def _group_rows(rows: list[dict[str, Any]], key: str, cfg: dict[str, Any], file: str,
                line: int | None, i: int, *, all_evals: bool) -> list[Row]:
    """The policy rows of one search-space entry's matrix rows: every agentic
    throughput row, an eval row (the top concurrency, or all), the top row of a
    fixed-seq-len spec-decoding entry; multi-node entries by their top row."""
    spec = str(rows[0].get("spec-decoding", "none")) != "none"
    agentic = rows[0].get("scenario-type") == AGENTIC
    top = max(rows, key=_conc)
    out: list[Row] = []
    if rows[0].get("prefill") is not None:  # multi-node
        if spec:
            out.append(_mk(top, key, cfg, file, line, i, eval_only=False))
            if agentic:
                out.append(_mk(top, key, cfg, file, line, i, eval_only=True))
        return out
    if agentic:
        out.extend(_mk(r, key, cfg, file, line, i, eval_only=False) for r in rows)
        if spec:
            for r in (sorted(rows, key=_conc) if all_evals else [top]):
                out.append(_mk(r, key, cfg, file, line, i, eval_only=True))
    elif spec:
        out.append(_mk(top, key, cfg, file, line, i, eval_only=False))
    return out


def _spec_keys(configs: Configs, globs: list[str] | None, lines: dict[str, dict[str, int]],
               out: RowSet) -> None:
    for key, cfg in configs.data.items():
        if globs and not any(fnmatch.fnmatchcase(key, g) for g in globs):
            continue
        out.matched.add(key)
        file = configs.origin.get(key, "")
        if _drafts(cfg):
            out.spec_keys[key] = (file, lines.get(file, {}).get(key))


def _drafts(node: Any, depth: int = 0) -> bool:
    """Does a config entry set spec-decoding anywhere (not only where today's generator
    reads it: an entry in an older shape, e.g. ``seq-len-configs``, that it expands to no
    row is then "not checked", never silently ok)?"""
    if depth > 16:
        return False
    if isinstance(node, dict):
        if str(node.get("spec-decoding", "none")) != "none":
            return True
        return any(_drafts(v, depth + 1) for v in node.values())
    if isinstance(node, list):
        return any(_drafts(v, depth + 1) for v in node)
    return False


def policy_rows(configs: Configs, runners: Runners, *, globs: list[str] | None,
                all_evals: bool) -> RowSet:
    """The rows to check, from the full sweep matrix (no eval marking).

    The generator is run on the selected keys together; when it refuses them, key by key
    (its rows for one key never depend on another key), so a key it refuses is left out
    (``refused``) and changes neither the rows nor the environment of any other key."""
    out = RowSet()
    lines = {f: key_lines(raw.decode("utf-8", errors="replace"))
             for f, raw in configs.sources.items()}
    _spec_keys(configs, globs, lines, out)
    keys = [k for k in configs.data if k in out.matched]
    m = _generate(configs, runners, keys)
    if m is None:
        m = Matrix([], [])
        for key in keys:
            one = _generate(configs, runners, [key], out.refused)
            if one is not None:
                m.rows.extend(one.rows)
                m.keys.extend(one.keys)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for key, row in zip(m.keys, m.rows, strict=True):
        groups.setdefault((key, _entry_id(row)), []).append(row)
    index: dict[str, int] = {}
    for (key, _), rows in groups.items():
        cfg = configs.data[key]
        file = configs.origin.get(key, "")
        line = lines.get(file, {}).get(key)
        i = index[key] = index.get(key, -1) + 1
        out.rows.extend(_group_rows(rows, key, cfg, file, line, i, all_evals=all_evals))
    return out


def _generate(configs: Configs, runners: Runners, keys: list[str],
              refused: dict[str, str] | None = None) -> Matrix | None:
    """The full matrix of ``keys`` alone; None when the generator refuses them (with one
    key and ``refused``: recorded there).

    The reference's master-config validation is not a precondition here: it is the
    config check's business (its rules change over time: a key an older tree's own
    generator expanded must still get its rows), and an entry too malformed to expand
    fails in the generator itself."""
    part = Configs(data={k: configs.data[k] for k in keys},
                   origin={k: configs.origin.get(k, "") for k in keys},
                   sources=configs.sources)
    try:
        return generate_matrix(part, runners, SweepRequest(mode="full", no_evals=True))
    except (InputError, TypeError, ValueError, LookupError, AttributeError,
            ArithmeticError) as exc:
        if refused is not None and len(keys) == 1:
            refused[keys[0]] = exc.message if isinstance(exc, InputError) else \
                f"the entry cannot be expanded ({type(exc).__name__}: {exc})"
        return None
