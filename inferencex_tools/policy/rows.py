"""The rows ``policy check`` traces: the sweep generator's jobs.

Pure: master configs + runners → :class:`~.resolve.Row` objects whose ``matrix`` is one
of the jobs the sweep dispatches, exactly as the generator makes it (so the job
environment derived from the workflows is the real one).  The jobs are the generator's
throughput matrix (``--no-evals``) and, for each key on its own, its eval matrix
(``--evals-only [--all-evals]``: what the changelog sweep asks the generator for an
entry that names the key); nothing here decides which points get an eval.  Of each
search-space entry's jobs of one kind (throughput, eval) the traced ones are
(docs/policy.md, "Rows"):

* single-node agentic: every job (throughput also without spec-decoding, G-01);
* any other entry with spec-decoding: its top-concurrency job (the launch does not
  depend on the concurrency).
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
        index: int) -> Row:
    """A traced row of one job: its matrix row is the generator's, unchanged."""
    agentic = row.get("scenario-type") == AGENTIC
    entry = {k: v for k, v in row.items() if k not in ("conc",)}
    return Row(config_file=file, key=key, key_line=line,
               scenario=AGENTIC if agentic else "fixed-seq-len", item_index=0,
               entry_index=index, conc=_conc(row), eval_only=row.get("eval-only") is True,
               config=cfg, entry=entry, seq={"isl": row.get("isl"), "osl": row.get("osl")},
               dram_gb=int(row.get("total-cpu-dram-gb", 0) or 0), matrix=dict(row))


def _traced(jobs: list[dict[str, Any]], *, eval_jobs: bool) -> list[dict[str, Any]]:
    """The jobs of one search-space entry and kind that are traced: every one of a
    single-node agentic entry, else the top-concurrency one of a spec-decoding entry."""
    if not jobs:
        return []
    first = jobs[0]
    spec = str(first.get("spec-decoding", "none")) != "none"
    if first.get("scenario-type") == AGENTIC and first.get("prefill") is None:
        return list(jobs) if spec or not eval_jobs else []
    return [max(jobs, key=_conc)] if spec else []


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
    """The rows to check: the traced jobs (module docstring) of the selected keys.

    The throughput matrix is generated for the selected keys together; when the
    generator refuses them, key by key (its rows for one key never depend on another
    key), so a key it refuses is left out (``refused``) and changes neither the rows nor
    the environment of any other key.  Eval jobs are generated for each spec-decoding
    key alone (eval marking groups rows across keys; a changelog entry names its keys)."""
    out = RowSet()
    lines = {f: key_lines(raw.decode("utf-8", errors="replace"))
             for f, raw in configs.sources.items()}
    _spec_keys(configs, globs, lines, out)
    keys = [k for k in configs.data if k in out.matched]
    throughput = SweepRequest(mode="full", no_evals=True)
    m = _generate(configs, runners, keys, throughput)
    if m is None:
        m = Matrix([], [])
        for key in keys:
            _extend(m, _generate(configs, runners, [key], throughput, out.refused))
    evals = Matrix([], [])
    for key in keys:
        if key in out.spec_keys and key not in out.refused:
            _extend(evals, _generate(configs, runners, [key], SweepRequest(
                mode="full", evals_only=True, all_evals=all_evals)))
    groups: dict[tuple[str, str], tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for kind, matrix in enumerate((m, evals)):
        for key, row in zip(matrix.keys, matrix.rows, strict=True):
            groups.setdefault((key, _entry_id(row)), ([], []))[kind].append(row)
    index: dict[str, int] = {}
    for (key, _), (jobs, eval_jobs) in groups.items():
        cfg = configs.data[key]
        file = configs.origin.get(key, "")
        line = lines.get(file, {}).get(key)
        i = index[key] = index.get(key, -1) + 1
        for row in (*_traced(jobs, eval_jobs=False), *_traced(eval_jobs, eval_jobs=True)):
            out.rows.append(_mk(row, key, cfg, file, line, i))
    return out


def _extend(m: Matrix, part: Matrix | None) -> None:
    if part is not None:
        m.rows.extend(part.rows)
        m.keys.extend(part.keys)


def _generate(configs: Configs, runners: Runners, keys: list[str], req: SweepRequest,
              refused: dict[str, str] | None = None) -> Matrix | None:
    """The matrix of ``keys`` alone for ``req``; None when the generator refuses them
    (with one key and ``refused``: recorded there).

    The reference's master-config validation is not a precondition here: it is the
    config check's business (its rules change over time: a key an older tree's own
    generator expanded must still get its rows), and an entry too malformed to expand
    fails in the generator itself."""
    part = Configs(data={k: configs.data[k] for k in keys},
                   origin={k: configs.origin.get(k, "") for k in keys},
                   sources=configs.sources)
    try:
        return generate_matrix(part, runners, req)
    except (InputError, TypeError, ValueError, LookupError, AttributeError,
            ArithmeticError) as exc:
        if refused is not None and len(keys) == 1:
            refused[keys[0]] = exc.message if isinstance(exc, InputError) else \
                f"the entry cannot be expanded ({type(exc).__name__}: {exc})"
        return None
