"""``ixtool launch …``: render what a matrix row launches; submit rows to Slurm; status."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from inferencex_tools.cli import complete
from inferencex_tools.cli.common import (
    DEPRECATED_REPO_DIR,
    FORMAT_OPTION,
    Format,
    emit,
    root_of,
)
from inferencex_tools.report.words import plural

if TYPE_CHECKING:
    from inferencex_tools.launch.service import RowSource

app = typer.Typer(
    help="From matrix row to launched job: render, submit to Slurm, follow the jobs.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

ROW_OPT = typer.Option(None, "--row", help="One matrix row (or a list of rows) as JSON.")
MATRIX_OPT = typer.Option(None, "--matrix",
                          help="A matrix file: a JSON list of rows (as `ixtool sweep` prints) "
                          "or a bucket object of row lists.")
KEY_OPT = typer.Option(None, "--config-key", help="Select rows of this master-config key.",
                       autocompletion=complete.config_keys)
ARM_OPT = typer.Option(None, "--arm", min=1,
                       help="Only the N-th search-space entry of the key (1-based, "
                       "fixed-seq-len entries first, then agentic ones).")
CONC_OPT = typer.Option(None, "--conc", help="Only rows with this concurrency (repeatable).")
EVAL_OPT = typer.Option(False, "--eval", help="Render/launch the rows as eval runs "
                        "(EVAL_ONLY=true).")
RUNNER_OPT = typer.Option(None, "--runner",
                          help="Concrete runner node (e.g. h200-dgxc-slurm_7); default: the "
                          "first node of the row's label in configs/runners.yaml.",
                          autocompletion=complete.runner_nodes)
UNSANDBOXED_OPT = typer.Option(
    False, "--allow-unsandboxed",
    help="Trace launcher and script even when no sandbox (user namespaces, bubblewrap) is "
    "available: they then run as this user, without isolation.  Without it that case is "
    "an error (exit 2).")
ROOT_OPT = typer.Option(None, "--root", help="Repository root (configs/, runners/, "
                        "benchmarks/; default: the repository the current directory is "
                        "in).")


def _source(row: str | None, matrix: Path | None, key: str | None, arm: int | None,
            conc: list[int] | None, eval_: bool, allow_unsandboxed: bool) -> RowSource:
    from inferencex_tools.launch.service import RowSource

    return RowSource(row_json=row, matrix=matrix, config_key=key, arm=arm,
                     conc=list(conc or []), eval=eval_, allow_unsandboxed=allow_unsandboxed)


@app.command("render")
def render(
    row: str | None = ROW_OPT,
    matrix: Path | None = MATRIX_OPT,
    config_key: str | None = KEY_OPT,
    arm: int | None = ARM_OPT,
    conc: list[int] | None = CONC_OPT,
    eval_: bool = EVAL_OPT,
    runner: str | None = RUNNER_OPT,
    allow_unsandboxed: bool = UNSANDBOXED_OPT,
    root: Path | None = ROOT_OPT,
    repo_dir: str | None = DEPRECATED_REPO_DIR,
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on warnings too."),
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Show what a row really launches: environment, Slurm allocation, server command.

    \b
    The row's launcher (runners/launch_<family>.sh) and benchmark script are run in
    a sandbox with stub executables (srun, salloc, vllm, …) that record what would
    run; nothing reaches a cluster or a GPU.  A selection matching several rows
    renders each.  Pieces that cannot be resolved are findings (LA rules).

    Exit codes: 0 clean, 1 findings (errors), 2 usage or input error.

    \b
    Example:
      ixtool launch render --config-key dsr1-fp8-h200-sglang --arm 1 --conc 64
    """
    from inferencex_tools.launch.render import format_job_text
    from inferencex_tools.launch.service import render as do_render

    src = _source(row, matrix, config_key, arm, conc, eval_, allow_unsandboxed)
    result, jobs = do_render(root_of(root, repo_dir), src, runner)
    if fmt is Format.text:
        for job in jobs:
            sys.stdout.write(format_job_text(job) + "\n")
    raise typer.Exit(emit(result, fmt, strict=strict))


def _progress_printer() -> Callable[[dict[str, object], float], None]:
    from inferencex_tools.cli.progress import progress_mode
    from inferencex_tools.launch.service import counts

    mode = progress_mode(sys.stderr)  # None under --quiet
    tty = mode == "line"
    last: list[str] = [""]

    def show(st: dict[str, object], elapsed: float) -> None:
        if mode is None:
            return
        c = counts(st)
        jobs = st.get("jobs")
        total = len(jobs) if isinstance(jobs, list) else 0
        parts = " · ".join(f"{k} {v}" for k, v in sorted(c.items()))
        line = f"launch: {plural(total, 'job')} · {parts} · {elapsed:.0f}s"
        if tty:
            sys.stderr.write("\r\x1b[2K" + line)
            sys.stderr.flush()
        elif parts != last[0]:
            sys.stderr.write(line + "\n")
        last[0] = parts

    return show


def _wait(state_path: Path, interval: float, timeout: float) -> dict[str, object]:
    from inferencex_tools.launch.service import wait

    show = _progress_printer()
    st = wait(state_path, interval=interval, timeout=timeout, progress=show)
    from inferencex_tools.cli.progress import progress_mode

    if progress_mode(sys.stderr) == "line":
        sys.stderr.write("\n")
    return st


@app.command("submit")
def submit(
    matrix: Path | None = MATRIX_OPT,
    row: str | None = ROW_OPT,
    config_key: str | None = KEY_OPT,
    arm: int | None = ARM_OPT,
    conc: list[int] | None = CONC_OPT,
    eval_: bool = EVAL_OPT,
    scheduler: str = typer.Option("slurm", "--scheduler", help="Scheduler (only slurm)."),
    partition: str | None = typer.Option(None, "--partition", help="Slurm partition "
                                         "(also exported as SLURM_PARTITION)."),
    account: str | None = typer.Option(None, "--account", help="Slurm account."),
    time_limit: str | None = typer.Option(None, "--time", help="Job time limit (Slurm "
                                          "syntax, e.g. 04:00:00)."),
    runner: str | None = RUNNER_OPT,
    allow_unsandboxed: bool = UNSANDBOXED_OPT,
    out_dir: Path = typer.Option(Path("launch-jobs"), "--out-dir",
                                 help="Where sbatch scripts, job output and state.json go."),
    workspace: Path | None = typer.Option(None, "--workspace",
                                          help="Checkout the jobs run in (default: --root)."),
    set_env: list[str] | None = typer.Option(None, "--set", metavar="KEY=VALUE",
                                             help="Extra variable exported into every job "
                                             "(repeatable)."),
    dry_run: bool = typer.Option(True, "--dry-run/--submit",
                                 help="Print the sbatch scripts (default) or submit them."),
    check: bool = typer.Option(True, "--check/--no-check",
                               help="Render each row first and skip rows with errors."),
    wait_: bool = typer.Option(False, "--wait", help="After submitting, wait for the jobs "
                               "(progress on stderr)."),
    interval: float = typer.Option(2.0, "--interval", min=0.1, help="Poll interval (s)."),
    timeout: float = typer.Option(3600.0, "--timeout", min=0, help="--wait limit (s)."),
    root: Path | None = ROOT_OPT,
    repo_dir: str | None = DEPRECATED_REPO_DIR,
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Turn rows into Slurm batch jobs: one sbatch per row.

    \b
    Each job: job name = the row's exp-name, --gres=gpu:<tp·pp·pcp>, one output file
    per row, the row's variables exported, and the row's launcher as the body (its
    srun becomes a step of the batch job).  Default --dry-run prints the scripts;
    --submit writes them to --out-dir, calls sbatch and records the job ids in
    <out-dir>/state.json (read back by `ixtool launch status`).

    Exit codes: 0 clean, 1 findings (rows skipped, sbatch refused, jobs failed),
    2 usage or input error.

    \b
    Example:
      ixtool launch submit --config-key dsr1-fp8-h200-sglang --partition gpu --submit --wait
    """
    from inferencex_tools.errors import UsageError
    from inferencex_tools.launch.service import SubmitRequest, status_result
    from inferencex_tools.launch.service import submit as do_submit

    if scheduler != "slurm":
        raise UsageError(f"--scheduler {scheduler!r}: only slurm is supported",
                         hint="drop --scheduler (slurm is the default)")
    extra: dict[str, str] = {}
    for item in set_env or []:
        if "=" not in item or not item.split("=", 1)[0]:
            raise UsageError(f"--set {item!r}: expected KEY=VALUE",
                             hint="e.g. --set HF_TOKEN_FILE=/etc/hf-token")
        k, v = item.split("=", 1)
        extra[k] = v
    src = _source(row, matrix, config_key, arm, conc, eval_, allow_unsandboxed)
    req = SubmitRequest(src=src, runner=runner, partition=partition, account=account,
                        time=time_limit, out_dir=out_dir, workspace=workspace,
                        extra_env=extra, submit=not dry_run, check=check)
    result, jobs, state_path = do_submit(root_of(root, repo_dir), req)
    if fmt is Format.text and dry_run:
        for j in jobs:
            sys.stdout.write(f"# ---- {j.script_name}\n{j.text}\n")
    if fmt is Format.text and state_path is not None:
        for s in result.info.get("submitted", []):
            sys.stdout.write(f"submitted {s['job-id']} {s['exp-name']}\n")
        sys.stdout.write(f"state: {state_path}\n")
    if wait_ and state_path is not None:
        st = _wait(state_path, interval, timeout)
        waited = status_result(st)
        result.extend(waited.findings)
        result.info["final"] = waited.info["jobs"]
    raise typer.Exit(emit(result, fmt))


@app.command("status")
def status(
    state_file: Path = typer.Option(Path("launch-jobs/state.json"), "--state",
                                    help="The state file written by `launch submit`."),
    wait_: bool = typer.Option(False, "--wait", help="Wait until every job finished "
                               "(progress on stderr)."),
    interval: float = typer.Option(2.0, "--interval", min=0.1, help="Poll interval (s)."),
    timeout: float = typer.Option(3600.0, "--timeout", min=0, help="--wait limit (s)."),
    fmt: Format = FORMAT_OPTION,
) -> None:
    """Read the submitted jobs back from Slurm (squeue, then sacct, then scontrol).

    Exit codes: 0 every job completed or still queued/running, 1 a job ended in
    another state (FAILED, CANCELLED, TIMEOUT …) or is unknown, 2 usage or input error.

    \b
    Example:
      ixtool launch status --wait
    """
    from inferencex_tools.launch.service import refresh, status_result

    st = _wait(state_file, interval, timeout) if wait_ else refresh(state_file)
    result = status_result(st)
    if fmt is Format.text:
        for j in result.info["jobs"]:
            sys.stdout.write(f"{j['job-id']:>8}  {j['state']:<11} {j['exp-name']}"
                             f"  ({j['mode']}, conc {j['conc']})\n")
    raise typer.Exit(emit(result, fmt))
