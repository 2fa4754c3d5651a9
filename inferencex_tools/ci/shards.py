"""Sweep matrix → GitHub job-matrix shards, and one row back out (pure).

GitHub caps a job matrix at 256 jobs and a job's outputs at 1 MB; a full sweep
exceeds both (spec SWEEP §6.3).  So the workflow does not pass rows through
job outputs: the matrix file travels as an artifact and each shard job's matrix
holds only small handles ``{"id": "<bucket>/<index>", "runner": <label>,
"name": <exp-name>}`` — at most ``MAX_JOBS`` per shard.  The row job reads its
row back with :func:`row_by_id` (``ixtool ci row``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inferencex_tools.ci.rules import TOO_MANY_JOBS
from inferencex_tools.errors import InputError, did_you_mean
from inferencex_tools.report.findings import Finding

MAX_JOBS = 256
SKIP_BUCKETS = frozenset({"changelog_metadata"})


def _buckets(matrix: Any) -> list[tuple[str, list[Any]]]:
    """(bucket name, rows) in a stable order; a plain row list is bucket ``rows``."""
    if isinstance(matrix, list):
        return [("rows", matrix)]
    if not isinstance(matrix, dict):
        raise InputError("sweep matrix: expected a JSON list of rows or an object of buckets",
                         hint="pass the JSON that ixtool sweep printed (--matrix FILE)")
    out: list[tuple[str, list[Any]]] = []
    for name, value in matrix.items():
        if name in SKIP_BUCKETS:
            continue
        if isinstance(value, dict):  # single_node: {"1k1k": [...], ...}
            out += [(f"{name}_{sub}", rows) for sub, rows in value.items()
                    if isinstance(rows, list)]
        elif isinstance(value, list):
            out.append((name, value))
    return out


@dataclass
class Shards:
    shards: list[list[dict[str, str]]] = field(default_factory=list)
    canary: list[dict[str, str]] = field(default_factory=list)  # 0 or 1 handle
    total: int = 0
    findings: list[Finding] = field(default_factory=list)


CANARY_BUCKETS = ("single_node_1k1k", "single_node_8k1k")


def _min_conc(row: dict[str, Any]) -> float:
    conc = row.get("conc")
    if isinstance(conc, list):
        vals = [c for c in conc if isinstance(c, int | float)]
        return min(vals) if vals else float("inf")
    return conc if isinstance(conc, int | float) else float("inf")


def pick_canary(matrix: Any) -> str | None:
    """The canary row's id: the lowest-concurrency non-eval single-node 1k1k/8k1k row
    (first on ties), as the reference's canary-select job picks it (spec §9)."""
    best: tuple[float, int, str] | None = None
    order = 0
    for name, rows in _buckets(matrix):
        if name not in CANARY_BUCKETS:
            continue
        for i, row in enumerate(rows):
            order += 1
            if not isinstance(row, dict) or row.get("run-eval") or row.get("eval-only"):
                continue
            key = (_min_conc(row), order, f"{name}/{i}")
            if best is None or key < best:
                best = key
    return best[2] if best else None


def make_shards(matrix: Any, *, max_shards: int, per_shard: int = MAX_JOBS,
                canary: bool = False) -> Shards:
    """Split every row of ``matrix`` into ``max_shards`` lists of ≤ ``per_shard`` handles.

    With ``canary`` the canary row is taken out of the shards into ``Shards.canary``
    (the workflow runs it first and the shards only after it succeeded)."""
    canary_id = pick_canary(matrix) if canary else None
    handles: list[dict[str, str]] = []
    for name, rows in _buckets(matrix):
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise InputError(f"sweep matrix: {name}[{i}] is not an object",
                                 hint="pass the JSON that ixtool sweep printed (--matrix FILE)")
            runner = row.get("runner")
            if not isinstance(runner, str) or not runner:
                raise InputError(f"sweep matrix: {name}[{i}] has no runner label",
                                 hint="pass the JSON that ixtool sweep printed (--matrix FILE)")
            handles.append({"id": f"{name}/{i}", "runner": runner,
                            "name": str(row.get("exp-name", f"{name}-{i}"))})
    canary_handles = [h for h in handles if h["id"] == canary_id]
    handles = [h for h in handles if h["id"] != canary_id]
    res = Shards(total=len(handles) + len(canary_handles), canary=canary_handles)
    capacity = max_shards * per_shard
    if len(handles) > capacity:
        res.findings.append(TOO_MANY_JOBS.at(
            "sweep matrix", None, None,
            f"{len(handles)} jobs exceed {max_shards} shards × {per_shard} jobs; "
            f"the last {len(handles) - capacity} rows would not run",
            hint="narrow the sweep (fewer config keys, or sweep-enabled for a trimmed "
            "matrix) or add shard jobs to the workflow and raise --max-shards"))
        handles = handles[:capacity]
    res.shards = [handles[i:i + per_shard] for i in range(0, len(handles), per_shard)]
    res.shards += [[] for _ in range(max_shards - len(res.shards))]
    return res


def row_by_id(matrix: Any, row_id: str) -> dict[str, Any]:
    """The row a handle id (``<bucket>/<index>``) names."""
    name, _, idx = row_id.rpartition("/")
    if not name or not idx.isdigit():
        raise InputError(f"bad row id {row_id!r}", hint="expected <bucket>/<index>")
    for bucket, rows in _buckets(matrix):
        if bucket == name:
            i = int(idx)
            if i >= len(rows) or not isinstance(rows[i], dict):
                raise InputError(f"row {row_id!r}: bucket {name} has {len(rows)} rows",
                                 hint=(f"the index is 0 … {len(rows) - 1}" if rows
                                       else f"bucket {name} is empty"))
            row: dict[str, Any] = rows[i]
            return row
    raise InputError(f"row {row_id!r}: no bucket {name!r} in the sweep matrix",
                     hint=did_you_mean(name, [b for b, _ in _buckets(matrix)], what="bucket"))
