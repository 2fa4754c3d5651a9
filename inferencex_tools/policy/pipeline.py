"""From rows to traces: each row's job, its launcher, the step the launcher starts.

For every row and every runner family its label can land on:

1. **Job**: the environment the launcher starts with, derived from the repository's
   workflows (:mod:`inferencex_tools.workflow`), in the *job view* (the checkout at
   :data:`WORKSPACE`, the runner's files under :data:`RUNNER_ROOT`).
2. **Launcher stage**: the launcher the workflow's run step starts is traced until it
   starts the benchmark step (``srun``/``docker run`` of a script) or submits a job
   (``srtctl apply``/``sbatch``): the step's script, environment, working directory
   and mounts come from that record (:mod:`inferencex_tools.workflow.step`); a
   submitted recipe comes with the record, after every edit of the launcher (runner
   injection included).
3. **Script stage**: the step's script is traced in the container's view.

Identical traces are run once: two jobs share a trace when the traced script (with
everything it sources) cannot tell their environments apart (:mod:`.effective`).
Traces run in parallel in one :class:`~inferencex_tools.sandbox.Session`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferencex_tools.policy.effective import Analyzer, key
from inferencex_tools.policy.resolve import Row
from inferencex_tools.policy.unreproducible import missing_stub_output
from inferencex_tools.progress import ProgressFn
from inferencex_tools.workflow import (
    LocalPaths,
    Workflows,
    bucket_of,
    job_environment,
    runner_defaults,
)
from inferencex_tools.workflow.step import Step, step_of

if TYPE_CHECKING:  # the tracer loads only when something is traced
    from inferencex_tools.sandbox import Record, Session, TraceResult

WORKSPACE = "/github/workspace"
RUNNER_ROOT = "/github/runner"
PATHS = LocalPaths(workspace=WORKSPACE, runner_root=RUNNER_ROOT)
STOP_TOOLS = ("srun", "docker", "podman", "sbatch", "srtctl")
SUBMIT_TOOLS = ("srtctl", "sbatch")



@dataclass
class Job:
    """One row on one runner family."""

    row: Row
    family: str
    node: str
    env: dict[str, str]  # the launcher's environment (job view)
    launcher: str | None
    source: str  # "workflow" (derived) | "built-in" (no workflow dispatches the row)
    notes: list[str] = field(default_factory=list)
    # why the runner would not start the workflows' job (a value its template takes as
    # a scalar is an object or an array): no launch to trace
    refused: list[str] = field(default_factory=list)


@dataclass
class JobTrace:
    job: Job
    launcher: TraceResult | None = None
    step: Step | None = None
    script: str | None = None  # repository path of the step's script
    trace: TraceResult | None = None  # the script stage (or the launcher, if it ran it)
    submission: Record | None = None  # multi-node: srtctl apply / sbatch as recorded
    why: str | None = None  # why the script stage did not run
    shared: bool = False  # the trace was run for another job with the same observation
    fallback: bool = False  # the script was resolved by the naming rule, not the launcher
    missing: str | None = None  # neither the launcher nor the naming rule found a script
    missing_recipe: str | None = None  # the recipe setting names no vendored file
    # a launcher-stage trace (the launcher, a static submission) the sandbox stopped or
    # whose ledger it refused: nothing of it is used, the job gets no verdict (PO310)
    stopped: TraceResult | None = None
    static: TraceResult | None = None  # the static submission's trace (multi-node)


def node_for(family: str, label: str, labels: Mapping[str, Any] | None) -> str:
    nodes = (labels or {}).get(label)
    if isinstance(nodes, list):
        for n in nodes:
            if str(n).split("_", 1)[0] == family:
                return str(n)
    return f"{family}_0"


def make_job(wf: Workflows | None, row: Row, family: str, node: str) -> Job:
    """The job of ``row`` on ``node``: derived from the workflows when one dispatches the
    row's bucket; the environment ``ixtool ci row`` exports when the workflows start the
    launcher with it; else that same environment as ixtool's built-in stand-in (the job's
    ``notes[0]`` says why).  A job the runner would refuse to start keeps the reason in
    ``refused``."""
    from inferencex_tools.launch.env import row_env

    if wf is not None and row.matrix:
        je = job_environment(wf, row.matrix, node=node, paths=PATHS)
        if je is not None:
            return Job(row, family, node, je.env, je.launcher, "workflow", list(je.notes),
                       list(je.refused))
    if wf is None:
        why = ("the repository has no workflow that dispatches benchmark jobs to a template "
               "starting runners/launch_*.sh (.github/workflows)")
    elif not row.matrix:
        why = "the row does not come from the sweep matrix"
    else:
        why = f"no workflow dispatches the matrix bucket '{bucket_of(row.matrix)}'"
    env = runner_defaults(PATHS, node)
    if row.matrix:
        env.update(row_env(row.matrix, node=node, workspace=WORKSPACE,
                           eval_only=row.eval_only))
    else:
        env.update(row.env(node))
    launcher = f"runners/launch_{family}.sh"
    env["LAUNCHER"] = launcher
    if row.multinode:
        env["IS_MULTINODE"] = "true"
        for side in ("prefill", "decode"):
            for s in (row.entry.get(side) or {}).get("additional-settings") or []:
                k, _, v = str(s).partition("=")
                env[k] = v
    if wf is not None and wf.row_job and row.matrix:
        return Job(row, family, node, env, launcher, "workflow",
                   [f"{wf.row_job}: the launcher environment `ixtool ci row` exports"])
    return Job(row, family, node, env, launcher, "built-in", [why])


# ------------------------------------------------------------------ views

def _to_job_view(value: str, inner: str, ws: str) -> str:
    if inner not in value:
        return value
    return (value.replace(f"{inner}/ws", ws).replace(f"{inner}/fs/", "/")
            .replace(f"{inner}/home", f"{RUNNER_ROOT}/home").replace(f"{inner}/tmp", "/tmp"))


def job_view(rec: Record, inner: str, ws: str = WORKSPACE) -> Record:
    """A record with the sandbox's paths mapped back to the job's own paths."""
    from inferencex_tools.sandbox import Record

    return Record(tool=rec.tool, argv=tuple(_to_job_view(a, inner, ws) for a in rec.argv),
                  env={k: _to_job_view(v, inner, ws) for k, v in rec.env.items()},
                  cwd=_to_job_view(rec.cwd, inner, ws),
                  files={_to_job_view(k, inner, ws): v for k, v in rec.files.items()},
                  seq=rec.seq)


def view_trace(tr: TraceResult, ws: str) -> TraceResult:
    """Without namespaces a trace saw local paths: map them back (with namespaces it saw
    the job's own paths already)."""
    if tr.isolation != "basic":
        return tr
    tr.records = [job_view(r, tr.sandbox, ws) for r in tr.records]
    if tr.last_line:
        tr.last_line = _to_job_view(tr.last_line, tr.sandbox, ws)
    tr.stderr_tail = _to_job_view(tr.stderr_tail, tr.sandbox, ws)
    return tr


def workspace_mounts(step: Step) -> list[tuple[str, str]]:
    """(path in the step, subdirectory of the checkout) for each view of the checkout."""
    if not step.container:
        return [(WORKSPACE, "")]
    out: list[tuple[str, str]] = []
    for host, cont in step.mounts:
        if host == WORKSPACE or host.startswith(WORKSPACE + "/"):
            out.append((cont, host[len(WORKSPACE):].strip("/")))
    if not out and step.workdir:
        # the launcher staged a copy of the checkout elsewhere (sbcast, rsync): the mount
        # holding the working directory is that copy
        for _, cont in step.mounts:
            c = cont.rstrip("/")
            if step.workdir == c or step.workdir.startswith(c + "/"):
                out.append((cont, ""))
                break
    return out


def _script_path(step: Step) -> str | None:
    """The step's script as a repository path (container paths mapped back)."""
    s = step.script
    if s is None:
        return None
    wd = step.workdir if step.container else WORKSPACE
    full = s if s.startswith("/") else os.path.normpath(os.path.join(wd or WORKSPACE, s))
    for cont, sub in workspace_mounts(step):
        c = cont.rstrip("/")
        if full.startswith(c + "/"):
            rel = full[len(c) + 1:]
            return os.path.normpath(f"{sub}/{rel}" if sub else rel)
    return None


def _sh(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def _pass_through(rep_in: Mapping[str, str], rep_out: Mapping[str, str],
                  mine: Mapping[str, str]) -> dict[str, str]:
    """A step environment for ``mine`` from a representative's (in → out) of the same
    launcher trace: values the launcher passed through come from ``mine``."""
    out: dict[str, str] = {}
    for k, v in rep_out.items():
        out[k] = mine[k] if k in rep_in and rep_in[k] == v and k in mine else v
    return out


class RepoIndex:
    """The repository's files and the analysis of what its scripts observe."""

    def __init__(self, repo: Path, *, changed: Iterable[str] = (),
                 modelled: Callable[[str], bool] | None = None) -> None:
        """``changed``: the files that differ from the base (PR mode; :class:`Analyzer`);
        ``modelled``: the files no name in data selects (:class:`Analyzer`)."""
        from inferencex_tools.io.layout import SKIP_DIRS

        self.repo = repo
        files: list[str] = []
        for dirpath, dirnames, filenames in os.walk(repo):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
            rel = os.path.relpath(dirpath, repo)
            files.extend(n if rel == "." else f"{rel}/{n}" for n in filenames)
        by_name: dict[str, list[str]] = {}
        for f in files:
            by_name.setdefault(os.path.basename(f), []).append(f)
        self.files = set(files)
        self.by_name = by_name
        self.analyzer = Analyzer(self._read, by_name, link=self._link, changed=changed,
                                 modelled=modelled)

    def clients(self) -> dict[str, tuple[str, ...]]:
        """The benchmark clients a trace may record instead of running, each with its code
        (:meth:`Analyzer.client`); the sandbox records one only while those files are
        byte for byte what they are now (``Session(clients=…)``)."""
        from inferencex_tools.sandbox import CLIENT_SCRIPTS

        out: dict[str, tuple[str, ...]] = {}
        for name in CLIENT_SCRIPTS:
            for path in self.by_name.get(name, ()):
                code = self.analyzer.client(path)
                if code is not None:
                    out[path] = code
        return out

    def _link(self, path: str) -> str | None:
        """Where a repository symbolic link points (as written; None: not a link)."""
        p = self.repo / path
        return os.readlink(p) if path in self.files and p.is_symlink() else None

    def _read(self, path: str) -> str | None:
        """A repository file as the repository has it (not the sandbox's copy)."""
        if path not in self.files:
            return None
        try:
            return (self.repo / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None


class Runner:
    """Runs the two stages for many jobs, deduplicated and in parallel."""

    def __init__(self, session: Session, index: RepoIndex, *, timeout: float, jobs: int,
                 progress: ProgressFn | None = None) -> None:
        self.session, self.repo, self.timeout = session, index.repo, timeout
        self.workers = max(1, jobs)
        self.progress = progress
        self.files = index.files
        self.analyzer = index.analyzer
        self.traces = 0
        self.unique = 0
        self.stages: dict[str, list[int]] = {}  # stage → [jobs, unique traces]
        self._done = 0
        self._total = 0
        self._what = ""
        self._lock = threading.Lock()

    def _phase(self, what: str, total: int) -> None:
        """A phase of tracing starts (``total`` traces, known now and fixed): progress
        counts within it, so its total never grows under the reader's eyes."""
        with self._lock:
            self._done, self._total, self._what = 0, total, what
            if self.progress and total:
                self.progress(0, total, what)

    def _tick(self, n: int = 1) -> None:
        with self._lock:
            self._done += n
            if self.progress:
                self.progress(self._done, self._total, self._what)

    def _map(self, fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        if not items:
            return []
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(fn, items))

    # ---------------------------------------------------------------- stages
    def run(self, jobs: list[Job]) -> list[JobTrace]:
        out = [JobTrace(j) for j in jobs]
        # stage 1: launchers, one trace per distinct observation
        groups: dict[tuple[Any, ...], list[JobTrace]] = {}
        for jt in out:
            j = jt.job
            if j.launcher is None or j.launcher not in self.files:
                jt.why = f"launcher {j.launcher} does not exist"
                continue
            c = self.analyzer.closure(j.launcher, j.env)
            groups.setdefault((j.launcher, key(j.env, c, j.family)), []).append(jt)
        # each stage is a phase of its own: stage 2's size is known only after stage 1
        self._phase("launcher traces", len(groups))
        reps = list(groups.values())
        results = self._map(lambda g: self._launch(g[0].job), reps)
        self.traces += sum(len(g) for g in reps)
        self.unique += len(reps)
        self.stages["launcher"] = [sum(len(g) for g in reps), len(reps)]
        for g, tr in zip(reps, results, strict=True):
            for i, jt in enumerate(g):
                jt.launcher = tr
                jt.shared = i > 0
                self._after_launch(jt, g[0].job, tr)
        self.run_scripts(out)
        return out

    def run_scripts(self, jts: list[JobTrace]) -> None:
        """Stage 2 for the jobs that have a step and no trace yet.

        Jobs whose scripts observe the same environment share one trace.  Jobs that
        differ only in the values of inert variables (numbers the script only prints or
        tests for presence: :func:`~.effective.inert_names`) share
        one too when it succeeds; when it fails each of them is traced (a failure's
        message may show the value)."""
        soft: dict[tuple[Any, ...], dict[tuple[Any, ...], list[JobTrace]]] = {}
        for jt in jts:
            if jt.step is None or jt.script is None or jt.trace is not None:
                continue
            c = self.analyzer.closure(jt.script, jt.step.env)
            where = (jt.script, jt.step.script, jt.step.workdir,
                     tuple(workspace_mounts(jt.step)))
            full = (*where, key(jt.step.env, c, jt.job.family))
            sk = (*where, key(jt.step.env, c, jt.job.family, soft=True))
            soft.setdefault(sk, {}).setdefault(full, []).append(jt)
        first = [list(subs.values()) for subs in soft.values()]
        self._phase("script traces", len(first))
        retry: list[list[JobTrace]] = []
        ran = len(first)
        for subs, tr in zip(first, self._map(lambda s: self._script(s[0][0]), first),
                            strict=True):
            self._assign(subs[0], tr, False)
            # a failure the sandbox caused (a stubbed tool's output missing) is the same
            # for every value: no trace of its own would say more
            same = tr.ok or missing_stub_output(tr) is not None
            for g in subs[1:]:
                if same:
                    self._assign(g, tr, True)
                else:
                    retry.append(g)
        if retry:
            self._phase("script traces (failed shared traces, one per job)", len(retry))
            ran += len(retry)
            for g, tr in zip(retry, self._map(lambda g: self._script(g[0]), retry),
                             strict=True):
                self._assign(g, tr, False)
        n = sum(len(g) for subs in first for g in subs)
        self.traces += n
        self.unique += ran
        st = self.stages.setdefault("script", [0, 0])
        st[0] += n
        st[1] += ran

    @staticmethod
    def _assign(group: list[JobTrace], tr: TraceResult, shared: bool) -> None:
        for i, jt in enumerate(group):
            jt.trace = tr
            jt.shared = jt.shared or shared or i > 0

    def submit_statically(self, jts: list[JobTrace]) -> None:
        """Multi-node jobs whose launcher did not reach its submission: do what the
        launcher does with a recipe, read statically from its text (which recipe it
        submits, whether it calls the synthetic-acceptance injector), with the real
        injector, and record the submission."""
        from inferencex_tools.policy.resolve import recipe_path

        todo = []
        for jt in jts:
            if jt.submission is not None or jt.stopped is not None or \
                    jt.job.launcher not in self.files:
                continue
            cfg = self._recipe_setting(jt)
            if cfg and recipe_path(cfg)[0] not in self.files:
                jt.missing_recipe = cfg
                continue
            todo.append(jt)
        scripts = [(jt, self._static_launch(jt)) for jt in todo]
        scripts = [(jt, s) for jt, s in scripts if s is not None]
        self._phase("static submissions", len(scripts))
        res = self._map(lambda p: self._inline(p[0].job, p[1]), scripts)
        self.traces += len(scripts)
        self.unique += len(scripts)
        self.stages["static-submission"] = [len(scripts), len(scripts)]
        for (jt, _), tr in zip(scripts, res, strict=True):
            jt.fallback = True
            jt.static = tr
            if tr.stopped_by is not None:
                jt.stopped = tr
                continue
            sub = [r for r in tr.records if r.tool in SUBMIT_TOOLS]
            if sub:
                jt.submission = sub[-1]
            else:
                jt.why = (jt.why or "") + f"; the static submission failed: {tr.last_line}"

    def _recipe_setting(self, jt: JobTrace) -> str | None:
        """The recipe the launcher submits (``EVAL_CONFIG_FILE`` for evals when the launcher
        reads it), from the job's settings."""
        env, launcher = jt.job.env, jt.job.launcher
        assert launcher is not None
        cfg = env.get("CONFIG_FILE")
        if jt.job.row.eval_only and env.get("EVAL_CONFIG_FILE") and \
                "EVAL_CONFIG_FILE" in self.analyzer.reachable_shell_text(launcher, env):
            cfg = env["EVAL_CONFIG_FILE"]
        return cfg or None

    def _static_launch(self, jt: JobTrace) -> str | None:
        env, launcher = jt.job.env, jt.job.launcher
        assert launcher is not None
        text = self.analyzer.reachable_shell_text(launcher, env)
        cfg = self._recipe_setting(jt)
        if not cfg:
            return None
        inject = ("inject_synthetic_acceptance" in text
                  and "runners/inject_synthetic_acceptance.py" in self.files)
        lines = [
            "set -e", f"cfg={_sh(cfg)}", 'path=${cfg%%:*}',
            'src="$GITHUB_WORKSPACE/benchmarks/multi_node/srt-slurm-recipes/${path#recipes/}"',
            'case $path in benchmarks/*) src="$GITHUB_WORKSPACE/$path" ;; esac',
            'mkdir -p srt-static && cd srt-static && mkdir -p "$(dirname "$path")"',
            'cp "$src" "$path"',
        ]
        if inject:
            lines.append('python3 "$GITHUB_WORKSPACE/runners/inject_synthetic_acceptance.py" '
                         '"$path" "$FRAMEWORK"')
        lines.append('srtctl apply -f "$cfg"')
        return "\n".join(lines) + "\n"

    def _inline(self, job: Job, script: str) -> TraceResult:
        tr = self.session.trace("inline", job.env, timeout=self.timeout,
                                stop=SUBMIT_TOOLS, workspace_at=[WORKSPACE], inline=script)
        self._tick()
        return view_trace(tr, WORKSPACE)

    def _launch(self, job: Job) -> TraceResult:
        assert job.launcher is not None
        tr = self.session.trace(job.launcher, job.env, timeout=self.timeout, stop=STOP_TOOLS,
                                workspace_at=[WORKSPACE])
        self._tick()
        return view_trace(tr, WORKSPACE)

    def _after_launch(self, jt: JobTrace, rep: Job, tr: TraceResult) -> None:
        from inferencex_tools.policy.engines import engine_of

        if tr.stopped_by is not None:  # no step, no fallback: nothing of it counts
            jt.stopped = tr
            jt.why = f"the sandbox stopped the launcher's trace ({tr.stopped_by})"
            return
        if any(engine_of(r) for r in tr.records):  # the launcher ran the script itself
            jt.trace = tr
            jt.script = jt.job.launcher
            return
        stops = [r for r in tr.records if r.tool in STOP_TOOLS]
        for rec in reversed(stops):
            if rec.tool in SUBMIT_TOOLS:
                jt.submission = rec
                return
            env = _pass_through(rep.env, rec.env, jt.job.env)
            step = step_of(rec.tool, rec.argv, env)
            if step is not None:
                jt.step = step
                jt.script = _script_path(step)
                if jt.script is None or jt.script not in self.files:
                    jt.why = (f"the step runs {step.script}, which is not a repository "
                              "script")
                    jt.script = None
                return
        jt.why = "the launcher started no benchmark step"

    def _script(self, jt: JobTrace) -> TraceResult:
        assert jt.step is not None and jt.script is not None
        step = jt.step
        binds = workspace_mounts(step)
        cwd = (step.workdir or binds[0][0]) if step.container and binds else WORKSPACE
        tr = self.session.trace(step.script or jt.script, step.env, timeout=self.timeout,
                                workspace_at=binds, cwd=cwd)
        self._tick()
        return view_trace(tr, binds[0][0] if binds else WORKSPACE)
