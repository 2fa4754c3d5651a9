"""Rows → Slurm batch scripts (pure).

One script per row: the job is the allocation (``--gres=gpu:<tp·pp·pcp>`` on
``nodes`` nodes, job name = the row's exp-name, per-row output file), the body
exports the row's variables exactly as the workflow would and runs the row's
launcher, which starts the benchmark script as a job step inside that
allocation (``srun`` within a batch job creates a step, not a new job).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from inferencex_tools.errors import InputError
from inferencex_tools.launch.env import gpu_count, row_env
from inferencex_tools.launch.rows import SelectedRow
from inferencex_tools.safetext import CONTROL

_SAFE = re.compile(r"[^A-Za-z0-9._+-]+")


@dataclass
class BatchOptions:
    workspace: str  # absolute checkout the job runs in
    out_dir: str  # absolute directory for scripts and job output
    partition: str | None = None
    time: str | None = None
    account: str | None = None
    exclusive: bool = False
    extra_env: dict[str, str] = field(default_factory=dict)


@dataclass
class BatchJob:
    index: int  # 1-based position in the submission
    sel: SelectedRow
    node: str
    launcher: str
    name: str
    gpus: int
    nodes: int
    script_name: str
    output: str
    text: str

    @property
    def row(self) -> dict[str, Any]:
        return self.sel.row


def safe_name(s: str) -> str:
    """The one way a row's text becomes a job or file name: letters, digits and
    ``._+-`` only (every other run of characters, control characters and separators
    included, is one ``_``), at most 200 characters, never empty or dot-only."""
    out = _SAFE.sub("_", s).strip("_")[:200].strip("_")
    return out if out.strip(".") else "job"


def _single_line(texts: list[str]) -> None:
    """Every text rendered into the script stays on its line (rows are checked before
    rendering, ``launch.rows.reject_control_chars``; this holds for options and extra
    environment too)."""
    for t in texts:
        m = CONTROL.search(t)
        if m:
            raise InputError(f"{t[:80]!r} contains the control character {m.group()!r}",
                             hint="batch-script values must be single-line printable text")


def nodes_of(row: dict[str, Any]) -> int:
    if row.get("prefill") is None:
        return 1
    return sum(int((row.get(side) or {}).get("num-worker", 1)) for side in ("prefill", "decode"))


def build(index: int, total: int, sel: SelectedRow, *, node: str, launcher: str,
          opts: BatchOptions) -> BatchJob:
    row = sel.row
    name = str(row.get("exp-name") or f"row{index}")
    gpus = gpu_count(row)
    nodes = nodes_of(row)
    stem = f"{index:03d}_{safe_name(name)}"
    output = f"{opts.out_dir}/{stem}.%j.out"
    origin = ", ".join(x for x in (
        sel.config_key, f"arm {sel.arm}" if sel.arm else None, f"conc {row.get('conc')}",
        "eval" if sel.eval_only else "throughput") if x)
    directives = [
        f"--job-name={safe_name(name)}",
        f"--nodes={nodes}",
        "--ntasks=1",
        f"--gres=gpu:{max(1, gpus // nodes)}",
        f"--output={output}",
        f"--chdir={opts.workspace}",
    ]
    if opts.partition:
        directives.append(f"--partition={opts.partition}")
    if opts.account:
        directives.append(f"--account={opts.account}")
    if opts.time:
        directives.append(f"--time={opts.time}")
    if opts.exclusive:
        directives.append("--exclusive")
    env = row_env(row, node=node, workspace=opts.workspace, eval_only=sel.eval_only)
    if opts.partition:
        env["SLURM_PARTITION"] = opts.partition
    if opts.account:
        env["SLURM_ACCOUNT"] = opts.account
    env.update(opts.extra_env)
    _single_line([*directives, origin, node, launcher, opts.workspace, *env, *env.values()])
    lines = [
        "#!/bin/bash",
        f"# ixtool launch submit: row {index} of {total} ({origin}) on {node}",
        *[f"#SBATCH {shlex.quote(d)}" for d in directives],
        "set -euo pipefail",
        *[f"export {k}={shlex.quote(v)}" for k, v in env.items()],
        f"cd {shlex.quote(opts.workspace)}",
        f"exec bash {shlex.quote(launcher)}",
    ]
    return BatchJob(index=index, sel=sel, node=node, launcher=launcher, name=name, gpus=gpus,
                    nodes=nodes, script_name=f"{stem}.sbatch", output=output,
                    text="\n".join(lines) + "\n")
