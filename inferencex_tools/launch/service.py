"""Orchestration behind ``ixtool launch``: selection → rows → rendered jobs / submissions."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from inferencex_tools.errors import UsageError
from inferencex_tools.launch.env import job_env
from inferencex_tools.launch.render import RenderedJob, inspect_launch
from inferencex_tools.launch.rows import (
    SelectedRow,
    Selection,
    eval_marked,
    filter_conc,
    reject_control_chars,
    rows_for,
    rows_from_json,
    rows_from_matrix,
    runners_file,
)
from inferencex_tools.launch.rules import (
    BAD_ROW,
    EVAL_UNMARKED,
    JOB_FAILED,
    JOB_PENDING,
    JOB_UNKNOWN,
    MULTINODE,
    NAME_CLASH,
    NO_LAUNCHER,
    NO_NODE,
    NO_ROWS,
    NO_SCHEDULER,
    NO_SCRIPT,
    NO_SUBMISSION,
    SUBMIT_FAILED,
)
from inferencex_tools.launch.sbatch import BatchJob, BatchOptions
from inferencex_tools.launch.stages import (
    explicit_env,
    trace_launch,
    trace_submission,
    variables_read,
)
from inferencex_tools.launch.targets import resolve
from inferencex_tools.report.findings import Result


@dataclass
class RowSource:
    """Where rows come from: one of row JSON, a matrix file or a config-key selection."""

    row_json: str | None = None
    matrix: Path | None = None
    config_key: str | None = None
    arm: int | None = None
    conc: list[int] = field(default_factory=list)
    eval: bool = False
    allow_unsandboxed: bool = False  # trace the launcher without isolation if none exists

    def check(self) -> None:
        given = [x for x in (self.row_json, self.matrix, self.config_key) if x is not None]
        if len(given) != 1:
            raise UsageError("give exactly one of --row, --matrix or --config-key",
                             hint="e.g. ixtool launch render --config-key dsr1-fp8-h200-sglang "
                             "--arm 1")
        if self.arm is not None and self.config_key is None:
            raise UsageError("--arm needs --config-key",
                             hint="add --config-key KEY (the arms are its search-space entries)")


def select_rows(root: Path, src: RowSource) -> list[SelectedRow]:
    src.check()
    if src.row_json is not None:
        rows = filter_conc(rows_from_json(src.row_json), src.conc)
    elif src.matrix is not None:
        rows = filter_conc(rows_from_matrix(src.matrix), src.conc)
    else:
        assert src.config_key is not None
        rows = rows_for(root, Selection(src.config_key, src.arm, src.conc or None, src.eval))
    reject_control_chars(rows)
    if src.eval:
        for r in rows:
            r.eval = True
            r.row["run-eval"] = True
            r.row["eval-only"] = True
    return rows


def runner_labels(root: Path) -> dict[str, list[str]]:
    """Runner label → node names from ``configs/runners.yaml`` (empty when absent)."""
    from inferencex_tools.sweep.load import load_runners

    rf = runners_file(root)
    return load_runners(rf).labels if rf.exists() else {}


def render_row(root: Path, sel: SelectedRow, labels: dict[str, list[str]],
               runner: str | None, *, timeout: float = 60.0,
               workflows: Any = None, allow_unsandboxed: bool = False) -> RenderedJob:
    row = sel.row
    missing = [k for k in ("exp-name", "model", "image", "precision", "framework", "runner")
               if k not in row]
    if row.get("prefill") is None and "tp" not in row:
        missing.append("tp")
    if missing:
        job = RenderedJob(row=row, config_key=sel.config_key, arm=sel.arm,
                          eval_only=sel.eval_only, node=None, launcher=None, script=None)
        job.findings.append(BAD_ROW.at("<row>", None, None,
                                         f"{job.name}: row lacks {', '.join(missing)}"))
        return job
    res = resolve(row, labels, runner, root)
    job = RenderedJob(row=row, config_key=sel.config_key, arm=sel.arm,
                      eval_only=sel.eval_only, node=res.node, launcher=res.launcher,
                      script=res.script)
    where = res.launcher or str(row.get("runner", "<row>"))
    rule_by_id = {r.id: r for r in (NO_NODE, NO_LAUNCHER, NO_SCRIPT, MULTINODE)}
    for rid, msg in res.problems:
        job.findings.append(rule_by_id[rid].at(where, None, None, f"{job.name}: {msg}"))
    if res.node is None or res.launcher is None:
        return job
    job.workflow_env, job.env_source = job_env(
        row, node=res.node, workspace="$GITHUB_WORKSPACE", eval_only=sel.eval_only,
        workflows=workflows)
    if row.get("prefill") is not None:
        _render_submission(root, job, res.launcher, timeout=timeout,
                           allow_unsandboxed=allow_unsandboxed)
        return job
    lt = trace_launch(root, res.launcher, dict(job.workflow_env), script=res.script,
                      timeout=timeout, allow_unsandboxed=allow_unsandboxed)
    reads = None
    if explicit_env(lt) and lt.step_script and not lt.step_script.startswith("/"):
        reads = variables_read(root, lt.step_script, lt.step_env)
    an = inspect_launch(lt, row=row, script=res.script, launcher=res.launcher,
                        workflow_env={k: v for k, v in job.workflow_env.items()
                                      if k != "GITHUB_WORKSPACE"}, reads=reads)
    job.allocation, job.step, job.server = an.allocation, an.step, an.server
    job.launcher_env, job.sidecars = an.launcher_env, an.sidecars
    job.findings.extend(an.findings)
    return job


def _render_submission(root: Path, job: RenderedJob, launcher: str, *, timeout: float,
                       allow_unsandboxed: bool) -> None:
    """A multi-node row: its launcher traced up to what it submits (``srtctl apply -f
    RECIPE``, ``sbatch``), the recipe named as a repository file when it is vendored."""
    from inferencex_tools.policy.resolve import recipe_path

    sub = trace_submission(root, launcher, dict(job.workflow_env), timeout=timeout,
                           allow_unsandboxed=allow_unsandboxed)
    if sub.record is None:
        job.findings.append(NO_SUBMISSION.at(launcher, None, None,
                                             f"{job.name}: {_why_not_submitted(sub)}"))
        return
    job.submission, job.submission_cwd = sub.command, sub.cwd
    args = job.submission[1:]
    recipes = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-f", "--file")]
    if recipes:
        path = recipe_path(recipes[-1])[0]
        job.recipe = path if (root / path).is_file() else \
            f"{recipes[-1]} (not in this repository: the launcher fetches it at run time)"


def _why_not_submitted(sub: Any) -> str:
    """How the launcher's trace ended before a submission: its exit, what it cloned (a
    recipe repository fetched at run time is not fetched under tracing), its last line
    and its last error message."""
    tr = sub.trace
    how = f"exited {tr.returncode}" if not tr.ok else "ended"
    clones = [r.argv for r in tr.records if r.tool == "git" and r.argv[1:2] == ("clone",)]
    urls = [a for argv in clones for a in argv[2:] if "://" in a or a.startswith("git@")]
    fetched = (f" (it clones {urls[-1]} at run time; tracing does not fetch it)"
               if urls else "")
    err = [ln for ln in tr.stderr_tail.strip().splitlines() if ln.strip()]
    said = next((ln for ln in reversed(err) if "error" in ln.lower()), err[-1] if err else "")
    return (f"the launcher {how} before it submitted anything{fetched}; last traced line: "
            f"{sub.show(tr.last_line or '?')}" + (f"; {sub.show(said)}" if said else ""))


def _render_all(root: Path, rows: list[SelectedRow], labels: dict[str, list[str]],
                runner: str | None, allow_unsandboxed: bool = False) -> list[RenderedJob]:
    """Render rows, a few at a time (each trace is a pair of sandboxed subprocesses)."""
    from concurrent.futures import ThreadPoolExecutor

    wf = workflows_of(root)

    def one(sel: SelectedRow) -> RenderedJob:
        return render_row(root, sel, labels, runner, workflows=wf,
                          allow_unsandboxed=allow_unsandboxed)

    workers = max(1, min(4, os.cpu_count() or 1, len(rows)))
    if workers == 1:
        return [one(sel) for sel in rows]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, rows))


def workflows_of(root: Path) -> Any:
    """The benchmark workflows of the repository at ``root`` (None without any that
    dispatches rows): the same derivation the policy check uses."""
    from inferencex_tools.io.layout import workflow_files
    from inferencex_tools.workflow import load_workflows

    wf = load_workflows(workflow_files(root))
    return wf if wf.dispatches else None


def render(root: Path, src: RowSource, runner: str | None) -> tuple[Result, list[RenderedJob]]:
    rows = select_rows(root, src)
    result = Result(command="launch render")
    if not rows:
        what = src.config_key or (str(src.matrix) if src.matrix else "--row")
        result.add(NO_ROWS.at(what, None, None,
                                f"no row of {what} matches arm={src.arm} conc={src.conc}"))
        return result, []
    labels = runner_labels(root)
    marked: list[dict[str, object]] = []
    if src.eval and src.config_key:
        marked = eval_marked(root, src.config_key)
    jobs: list[RenderedJob] = []
    for sel, job in zip(rows, _render_all(root, rows, labels, runner,
                                          src.allow_unsandboxed), strict=True):
        if src.eval and src.config_key and not any(
                _same_arm(m, sel.row) for m in marked):
            job.findings.append(EVAL_UNMARKED.at(
                src.config_key, None, None,
                f"{job.name}: the sweep's eval row for this key is "
                + ", ".join(str(m.get("exp-name")) for m in marked)))
        jobs.append(job)
        result.checked.append(job.name)
        result.extend(job.findings)
    result.info["jobs"] = [j.to_dict() for j in jobs]
    return result, jobs


def _same_arm(a: dict[str, object], b: dict[str, object]) -> bool:
    keys = ("tp", "ep", "pp", "dp-attn", "kv-offloading", "conc", "spec-decoding")
    return all(a.get(k) == b.get(k) for k in keys)


# ---------------------------------------------------------------------------- submit / status

@dataclass
class SubmitRequest:
    src: RowSource
    runner: str | None = None
    partition: str | None = None
    account: str | None = None
    time: str | None = None
    out_dir: Path = Path("launch-jobs")
    workspace: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    submit: bool = False
    check: bool = True


def plan_jobs(root: Path, req: SubmitRequest) -> tuple[Result, list[BatchJob]]:
    """Rows → batch jobs, with the render checks run on each row first (``check``)."""
    rows = select_rows(root, req.src)
    result = Result(command="launch submit")
    if not rows:
        result.add(NO_ROWS.at(req.src.config_key or "<rows>", None, None,
                                "the selection matches no row"))
        return result, []
    labels = runner_labels(root)
    workspace = str((req.workspace or root).resolve())
    opts = BatchOptions(workspace=workspace, out_dir=str(req.out_dir.resolve()),
                        partition=req.partition, time=req.time, account=req.account,
                        extra_env=dict(req.extra_env))
    jobs: list[BatchJob] = []
    rendered = _render_all(root, rows, labels, req.runner,
                           req.src.allow_unsandboxed) if req.check else []
    for i, sel in enumerate(rows, 1):
        job = _plan_row(root, i, rows, sel, labels, req.runner, opts,
                        rendered[i - 1] if rendered else None, result)
        if job is not None:
            jobs.append(job)
    _name_clashes(jobs, result)
    result.info["jobs"] = [{"index": j.index, "exp-name": j.name, "node": j.node,
                            "gpus": j.gpus, "script": j.script_name, "output": j.output,
                            "sbatch": j.text} for j in jobs]
    return result, jobs


def _plan_row(root: Path, i: int, rows: list[SelectedRow], sel: SelectedRow,
              labels: dict[str, list[str]], runner: str | None, opts: BatchOptions,
              rendered: RenderedJob | None, result: Result) -> BatchJob | None:
    """Row ``i`` → its batch job, or None when resolving or rendering it found an error
    (the findings and the checked row go to ``result``)."""
    from inferencex_tools.launch.sbatch import build

    res = resolve(sel.row, labels, runner, root)
    where = res.launcher or str(sel.row.get("runner", "<row>"))
    name = str(sel.row.get("exp-name", f"row {i}"))
    rule_by_id = {r.id: r for r in (NO_NODE, NO_LAUNCHER, NO_SCRIPT, MULTINODE)}
    problems = [rule_by_id[rid].at(where, None, None, f"{name}: {msg}")
                for rid, msg in res.problems]
    if rendered is not None and not problems:
        problems = rendered.findings
    result.extend(problems)
    if any(p.severity.value == "error" for p in problems) or res.node is None \
            or res.launcher is None:
        return None
    alloc = rendered.allocation if rendered is not None else None
    if alloc is not None:  # what the launcher itself requests fills the gaps
        opts = replace(opts, partition=opts.partition or alloc.partition,
                       time=opts.time or alloc.time, account=opts.account or alloc.account,
                       exclusive=opts.exclusive or alloc.exclusive)
    result.checked.append(name)
    return build(i, len(rows), sel, node=res.node, launcher=res.launcher, opts=opts)


def _name_clashes(jobs: list[BatchJob], result: Result) -> None:
    seen: dict[str, list[int]] = {}
    for j in jobs:
        seen.setdefault(j.name, []).append(j.index)
    for name, idx in seen.items():
        if len(idx) > 1:
            result.add(NAME_CLASH.at("<matrix>", None, None,
                                       f"rows {', '.join(map(str, idx))} share exp-name {name}"))


def submit(root: Path, req: SubmitRequest) -> tuple[Result, list[BatchJob], Path | None]:
    """Plan, and with ``req.submit`` write the scripts, sbatch them and record the ids."""
    from inferencex_tools.io import slurm
    from inferencex_tools.io.files import atomic_write
    from inferencex_tools.launch import state

    result, jobs = plan_jobs(root, req)
    if not req.submit or not jobs:
        return result, jobs, None
    if not slurm.available("sbatch"):
        result.add(NO_SCHEDULER.at("sbatch", None, None, "sbatch is not on PATH"))
        return result, jobs, None
    out = req.out_dir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    state_path = out / "state.json"
    st = state.new_state("slurm", str((req.workspace or root).resolve()), str(out))
    state.save(state_path, st)  # also when sbatch refuses every job: --wait/status read it
    for j in jobs:
        script = out / j.script_name
        atomic_write(script, j.text.encode("utf-8"))
        job_id, msg = slurm.sbatch(script)
        if job_id is None:
            result.add(SUBMIT_FAILED.at(str(script), None, None, f"{j.name}: {msg}"))
            continue
        st["jobs"].append({
            "index": j.index, "job-id": job_id, "exp-name": j.name,
            "config-key": j.sel.config_key, "arm": j.sel.arm, "conc": j.row.get("conc"),
            "mode": "eval" if j.sel.eval_only else "throughput", "node": j.node,
            "gpus": j.gpus, "script": str(script), "output": j.output.replace("%j", job_id),
            "state": "SUBMITTED", "row": j.row,
        })
        state.save(state_path, st)  # after every job: an interrupted run loses nothing
    result.info["state-file"] = str(state_path)
    result.info["submitted"] = [{"job-id": s["job-id"], "exp-name": s["exp-name"]}
                                for s in st["jobs"]]
    return result, jobs, state_path


def refresh(state_path: Path) -> dict[str, object]:
    """Query the scheduler for every recorded job and write the states back."""
    from inferencex_tools.io import slurm
    from inferencex_tools.launch import state

    st = state.load(state_path)
    ids = [str(j["job-id"]) for j in st["jobs"]]
    statuses = slurm.query(ids)
    for j in st["jobs"]:
        s = statuses[str(j["job-id"])]
        j["state"] = s.state
        j["exit-code"] = s.exit_code
        j["source"] = s.source
    state.save(state_path, st)
    return st


def status_result(st: dict[str, object]) -> Result:
    from inferencex_tools.io.slurm import TERMINAL

    result = Result(command="launch status")
    jobs = st.get("jobs")
    assert isinstance(jobs, list)
    for j in jobs:
        label = f"job {j['job-id']} ({j['exp-name']})"
        result.checked.append(str(j["job-id"]))
        if j["state"] == "COMPLETED":
            continue
        if j["state"] == "UNKNOWN":
            result.add(JOB_UNKNOWN.at(str(j["script"]), None, None, f"{label}: not found"))
        elif j["state"] in TERMINAL:
            result.add(JOB_FAILED.at(str(j["script"]), None, None,
                                       f"{label}: {j['state']} (exit {j.get('exit-code')}); "
                                       f"output {j['output']}"))
        else:
            result.add(JOB_PENDING.at(str(j["script"]), None, None,
                                        f"{label}: {j['state']}"))
    result.info["jobs"] = [{k: j.get(k) for k in ("index", "job-id", "exp-name", "conc",
                                                  "mode", "state", "exit-code", "output")}
                           for j in jobs]
    return result


def counts(st: dict[str, object]) -> dict[str, int]:
    jobs = st.get("jobs")
    assert isinstance(jobs, list)
    out: dict[str, int] = {}
    for j in jobs:
        out[str(j["state"])] = out.get(str(j["state"]), 0) + 1
    return out


def wait(state_path: Path, *, interval: float, timeout: float,
         progress: Callable[[dict[str, object], float], None]) -> dict[str, object]:
    """Refresh until every job is in a terminal state or ``timeout`` seconds passed."""
    from inferencex_tools.io.slurm import TERMINAL

    start = time.monotonic()
    while True:
        st = refresh(state_path)
        elapsed = time.monotonic() - start
        progress(st, elapsed)
        jobs = st["jobs"]
        assert isinstance(jobs, list)
        if all(j["state"] in TERMINAL for j in jobs) or elapsed >= timeout:
            return st
        time.sleep(interval)
