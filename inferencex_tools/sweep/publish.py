"""The matrix published to GitHub Actions (SWEEP.md §6.3): outputs sharded under the
limits, and the jobs-per-config summary.  Writing them is :mod:`inferencex_tools.io.actions`.

A matrix may expand to at most 256 jobs and a job's outputs may total at most
1 MB (GitHub measures UTF-16, so 2 bytes per ASCII character).  Buckets over
either bound are split into ``<bucket>_1``, ``<bucket>_2``, … in row order;
concatenating the shards in index order gives the original bucket back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

MAX_JOBS = 256
MAX_OUTPUT_BYTES = 1_000_000  # per job, UTF-16 measure

Row = dict[str, Any]


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def utf16_size(text: str) -> int:
    return len(text.encode("utf-16-le"))


@dataclass
class Sharded:
    outputs: dict[str, str] = field(default_factory=dict)  # output name → compact JSON
    notes: list[str] = field(default_factory=list)
    shards: dict[str, list[str]] = field(default_factory=dict)  # bucket → shard names

    @property
    def total_bytes(self) -> int:
        return sum(utf16_size(k) + utf16_size(v) for k, v in self.outputs.items())


def split_rows(rows: list[Row], *, max_rows: int = MAX_JOBS,
               max_bytes: int = MAX_OUTPUT_BYTES) -> list[list[Row]]:
    """Consecutive chunks of ≤ max_rows rows whose compact JSON is ≤ max_bytes (UTF-16)."""
    chunks: list[list[Row]] = []
    cur: list[Row] = []
    size = utf16_size("[]")
    for r in rows:
        rs = utf16_size(compact(r)) + 2  # ", " worst case separator
        if cur and (len(cur) >= max_rows or size + rs > max_bytes):
            chunks.append(cur)
            cur, size = [], utf16_size("[]")
        cur.append(r)
        size += rs
    if cur or not chunks:
        chunks.append(cur)
    return chunks


def shard_buckets(buckets: dict[str, Any], *, max_rows: int = MAX_JOBS,
                  max_bytes: int = MAX_OUTPUT_BYTES) -> Sharded:
    """Outputs for each bucket; list buckets over a limit become ``<name>_<i>``.

    Non-list values (e.g. metadata objects) are written as they are.
    """
    out = Sharded()
    for name, value in buckets.items():
        if not isinstance(value, list):
            out.outputs[name] = compact(value)
            continue
        text = compact(value)
        if len(value) <= max_rows and utf16_size(text) <= max_bytes:
            out.outputs[name] = text
            out.shards[name] = [name]
            continue
        chunks = split_rows(value, max_rows=max_rows, max_bytes=max_bytes)
        names = [f"{name}_{i}" for i in range(1, len(chunks) + 1)]
        for n, chunk in zip(names, chunks, strict=True):
            out.outputs[n] = compact(chunk)
        out.shards[name] = names
        out.notes.append(
            f"{name}: {len(value)} rows, {utf16_size(text)} bytes (UTF-16) exceed "
            f"{max_rows} jobs / {max_bytes} bytes; sharded into {', '.join(names)}")
    if out.total_bytes > max_bytes:
        out.notes.append(
            f"total output is {out.total_bytes} bytes (UTF-16), over GitHub's {max_bytes} "
            "byte per-job limit: consume the shards from separate jobs")
    return out


def join_shards(outputs: dict[str, str], bucket: str) -> list[Row]:
    """Inverse of :func:`shard_buckets` for one bucket (used by consumers and tests)."""
    if bucket in outputs:
        rows: list[Row] = json.loads(outputs[bucket])
        return rows
    rows = []
    i = 1
    while f"{bucket}_{i}" in outputs:
        rows.extend(json.loads(outputs[f"{bucket}_{i}"]))
        i += 1
    return rows


# ----------------------------------------------------------------------------- summary

def row_gpus(row: Row) -> int | None:
    try:
        if "prefill" in row:
            total = 0
            for w in (row["prefill"], row["decode"]):
                total += int(w["num-worker"]) * int(w["tp"]) * int(w.get("pp", 1)) \
                    * int(w.get("pcp-size", 1))
            return total
        return int(row["tp"]) * int(row.get("pp", 1)) * int(row.get("pcp-size", 1))
    except (KeyError, TypeError, ValueError):
        return None


@dataclass
class SummaryLine:
    key: str
    scenario: str
    jobs: int = 0
    gpus: set[int] = field(default_factory=set)
    gpu_hours: float | None = 0.0


def summarize(rows: Iterable[Row], keys: Iterable[str]) -> list[SummaryLine]:
    table: dict[tuple[str, str], SummaryLine] = {}
    for row, key in zip(rows, keys, strict=True):
        scen = row.get("scenario-type", "fixed-seq-len")
        if "isl" in row and scen == "fixed-seq-len":
            from inferencex_tools.sweep.generate import seq_name

            scen = f"fixed {seq_name(row['isl'], row['osl'])}"
        if "prefill" in row:
            scen += " (multinode)"
        if row.get("eval-only"):
            scen += " eval"
        line = table.setdefault((key, scen), SummaryLine(key, scen))
        line.jobs += 1
        g = row_gpus(row)
        if g is not None:
            line.gpus.add(g)
        dur = row.get("duration")
        if line.gpu_hours is not None and isinstance(dur, int | float) and g is not None:
            line.gpu_hours += g * dur / 3600
        else:
            line.gpu_hours = None
    return list(table.values())


def summary_markdown(lines: list[SummaryLine], notes: list[str] | None = None) -> str:
    """The job summary: config keys and notes come from the PR's configs, shown inert."""
    from inferencex_tools.report.inert import code, prose

    out = ["### ixtool sweep: jobs per config", "",
           "| config key | scenario | jobs | GPUs/job | est. GPU-hours |",
           "|---|---|---:|---|---:|"]
    total_jobs = 0
    total_h = 0.0
    unknown = False
    for ln in lines:
        gpus = ", ".join(str(g) for g in sorted(ln.gpus)) or "?"
        hours = f"{ln.gpu_hours:.1f}" if ln.gpu_hours is not None else "n/a"
        out.append(f"| {code(ln.key, table=True)} | {prose(ln.scenario)} | {ln.jobs} | "
                   f"{gpus} | {hours} |")
        total_jobs += ln.jobs
        if ln.gpu_hours is None:
            unknown = True
        else:
            total_h += ln.gpu_hours
    suffix = " (+ fixed-seq-len jobs of unknown duration)" if unknown else ""
    out += ["", f"**{total_jobs} jobs**, est. {total_h:.1f} GPU-hours{suffix}. "
            "GPU-hours = jobs × GPUs × duration; only agentic rows carry a duration."]
    for n in notes or []:
        out.append(f"- {prose(n)}")
    return "\n".join(out) + "\n"
