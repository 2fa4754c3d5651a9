"""Tracing a row's launch in two stages, both in the sandbox
(:func:`inferencex_tools.sandbox.trace_script`: ``env -i``, stub executables,
namespaces when available, timeout).

1. **Launcher**: ``runners/launch_<family>.sh`` runs with the workflow's variables.
   The sandbox root stands for the checkout (``$GITHUB_WORKSPACE``).  Its Slurm
   calls (``salloc``/``sbatch``/``srun``) and container runs (``docker run``) are
   recorded; the sandbox stands for the node, so staging steps run there
   (``sbcast`` copies, an ``srun`` with no container and no script runs its command).
2. **Job step**: the benchmark script named by the recorded ``srun`` (or ``docker
   run`` / ``podman run``) runs with the environment that step would see (the
   launcher's environment plus ``--export`` additions; a container runtime's
   ``--env`` list), in the container's view: the checkout at each mount of the
   workspace or of a copy the launcher staged, paths as the job has them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from inferencex_tools.launch.slurmargs import parse_slurm_args, step_runs
from inferencex_tools.sandbox import Record, TraceResult, trace_script
from inferencex_tools.workflow.step import Step, step_of

WS_TOKEN = "_ixtool_workspace_"
RUNNER_WORKSPACE = "/github/workspace"  # $GITHUB_WORKSPACE as the launcher stage sees it
HOST_WORKSPACE = "$GITHUB_WORKSPACE"
# variables of the sandbox itself, not of the launch
SANDBOX_VARS = frozenset({"PATH", "HOME", "PWD", "OLDPWD", "TMPDIR", "LANG", "SHLVL", "_"})
CONTAINER_TOOLS = ("docker", "podman")  # job steps run by a container runtime on the node


def args_of(rec: Record) -> list[str]:
    """A record's arguments without the program name."""
    argv = list(rec.argv)
    if argv and argv[0].rsplit("/", 1)[-1] == rec.tool:
        return argv[1:]
    return argv


@dataclass
class LaunchTrace:
    launcher: TraceResult
    step_record: Record | None = None
    step_env: dict[str, str] = field(default_factory=dict)  # as the job step sees it
    mounts: list[tuple[str, str]] = field(default_factory=list)  # (host, container)
    workdir: str = HOST_WORKSPACE  # the step's working directory (container view)
    step_script: str | None = None  # the benchmark script the job step runs
    container: Step | None = None  # a container runtime's step (docker/podman run)
    script: TraceResult | None = None

    def show(self, value: str) -> str:
        """A recorded string in the job's own view (container paths, $GITHUB_WORKSPACE)."""
        if self.script is not None:
            value = value.replace(self.script.root + "/", self.workdir.rstrip("/") + "/")
            if value == self.script.root:
                value = self.workdir
        value = value.replace(WS_TOKEN, self.workdir.rstrip("/") or "/")
        return value.replace(self.launcher.root, HOST_WORKSPACE)


def _opts(args: list[str]) -> dict[str, list[str]]:
    return parse_slurm_args(args)[0]


def _mounts(rec: Record) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for spec in _opts(args_of(rec)).get("--container-mounts", []):
        for m in spec.split(","):
            bits = m.split(":")
            if len(bits) >= 2 and bits[0] and bits[1]:
                out.append((bits[0].rstrip("/") or "/", bits[1].rstrip("/") or "/"))
    return out


def _step_env(rec: Record, root: str) -> dict[str, str]:
    env = {k: v for k, v in rec.env.items() if k not in SANDBOX_VARS}
    for val in _opts(args_of(rec)).get("--export", []):
        parts = val.split(",")
        if parts and parts[0] == "NONE":
            env = {}
        for p in parts:
            if "=" in p:
                k, v = p.split("=", 1)
                env[k] = v
    env["GITHUB_WORKSPACE"] = root
    return env


SUBMIT_TOOLS = ("srtctl", "sbatch")  # how a multi-node launcher hands its recipe over


@dataclass
class Submission:
    """What a multi-node launcher submits, as traced: the last ``srtctl``/``sbatch`` call
    (None when the trace did not reach one) and the trace itself."""

    trace: TraceResult
    record: Record | None

    def show(self, value: str) -> str:
        """A recorded string as the job has it (the checkout at $GITHUB_WORKSPACE)."""
        return value.replace(self.trace.root, HOST_WORKSPACE).replace(
            RUNNER_WORKSPACE, HOST_WORKSPACE)

    @property
    def command(self) -> list[str]:
        rec = self.record
        return [] if rec is None else [rec.tool, *(self.show(a) for a in args_of(rec))]

    @property
    def cwd(self) -> str | None:
        return None if self.record is None else self.show(self.record.cwd)


def trace_submission(root: Path, launcher: str, env: dict[str, str], *,
                     timeout: float = 60.0, allow_unsandboxed: bool = False) -> Submission:
    """Trace a multi-node ``launcher`` with ``env`` until it submits (``srtctl apply`` of
    a recipe, an ``sbatch``): the recipe's own servers run on the cluster, not here."""
    from inferencex_tools.sandbox import Session

    lenv = {**{k: v for k, v in env.items() if k != "GITHUB_WORKSPACE"},
            "GITHUB_WORKSPACE": RUNNER_WORKSPACE}
    with Session(root, allow_unsandboxed=allow_unsandboxed) as session:
        tr = session.trace(launcher, lenv, timeout=timeout, stop=SUBMIT_TOOLS,
                           workspace_at=(RUNNER_WORKSPACE,), cwd=RUNNER_WORKSPACE)
    subs = [r for r in tr.records if r.tool in SUBMIT_TOOLS]
    return Submission(tr, subs[-1] if subs else None)


def trace_launch(root: Path, launcher: str, env: dict[str, str], *, script: str | None,
                 timeout: float = 60.0, allow_unsandboxed: bool = False) -> LaunchTrace:
    """Trace ``launcher`` with ``env``; then the job step that runs ``script``."""
    from inferencex_tools.sandbox import Session

    # the checkout at the path a runner has it, so launchers that read $GITHUB_WORKSPACE
    # (``set -u``, container mounts of it) see a real directory
    lenv = {**{k: v for k, v in env.items() if k != "GITHUB_WORKSPACE"},
            "GITHUB_WORKSPACE": RUNNER_WORKSPACE}
    with Session(root, allow_unsandboxed=allow_unsandboxed) as session:
        lt = LaunchTrace(session.trace(launcher, lenv, timeout=timeout,
                                       workspace_at=(RUNNER_WORKSPACE,), cwd=RUNNER_WORKSPACE))
    rec = _job_step(lt.launcher.records, script)
    if rec is None:
        return lt
    root_s = lt.launcher.root
    # the directories that hold the checkout when the step starts: the workspace, and
    # the copies the launcher staged (seen by the sandbox when the step was recorded)
    holds = {root_s, *(c.rstrip("/") or "/" for c in lt.launcher.checkout_copies)}
    container, ws_at = _take_step(lt, rec, holds)
    if lt.step_script is None or lt.step_script.startswith("/"):
        return lt
    if container and ws_at:
        # the container's view: the checkout at its mount point(s), paths as the job has them
        senv = {k: v.replace(HOST_WORKSPACE, RUNNER_WORKSPACE) for k, v in lt.step_env.items()}
        with Session(root, allow_unsandboxed=allow_unsandboxed) as session:
            lt.script = session.trace(lt.step_script, senv, timeout=timeout,
                                      workspace_at=(*ws_at, RUNNER_WORKSPACE), cwd=lt.workdir)
        return lt
    lt.script = trace_script(root, lt.step_script, _script_env(lt, container),
                             timeout=timeout, allow_unsandboxed=allow_unsandboxed)
    return lt


def _take_step(lt: LaunchTrace, rec: Record, holds: set[str]) -> tuple[bool, tuple[str, ...]]:
    """Fill ``lt`` from the job step ``rec``: mounts, script, working directory and
    environment (container view).  Returns (runs in a container, the container paths of
    the checkout)."""
    root_s = lt.launcher.root
    lt.step_record = rec
    if rec.tool in CONTAINER_TOOLS:
        lt.container = _container_step(rec)
        assert lt.container is not None
        lt.mounts = list(lt.container.mounts)
        container = True
        workdir = lt.container.workdir
    else:
        lt.mounts = _mounts(rec)
        opts = _opts(args_of(rec))
        container = bool(opts.get("--container-image"))
        workdir = (opts.get("--container-workdir") or [""])[-1]
    lt.step_script = _step_script(rec, root_s, lt.mounts, holds)
    ws_at = tuple(c for h, c in lt.mounts if h in holds)
    if container:
        lt.workdir = workdir or (ws_at[0] if ws_at else "/")
    env = lt.container.env if lt.container is not None else _step_env(rec, root_s)
    lt.step_env = {k: lt.show(v) for k, v in env.items()}
    return container, ws_at


def _container_step(rec: Record) -> Step | None:
    """A container runtime's ``run`` that runs a script (image, mounts, env, workdir)."""
    return step_of(rec.tool, rec.argv, rec.env) if rec.tool in CONTAINER_TOOLS else None


def _runs(rec: Record, script: str | None) -> bool:
    """Does the recorded call run ``script`` (any benchmark script when None)?"""
    if rec.tool == "srun":
        return step_runs(args_of(rec), script)
    step = _container_step(rec)
    ran = step.script if step is not None else None
    if ran is None:
        return False
    if script is None:
        return ran.endswith(".sh") and "benchmarks/" in ran
    return ran == script or ran.endswith("/" + script)


def _job_step(records: list[Record], script: str | None) -> Record | None:
    """The srun (or docker/podman run) that runs ``script``, else the first that runs any
    benchmark script."""
    steps = [r for r in records if r.tool == "srun" or r.tool in CONTAINER_TOOLS]
    return next((r for r in steps if _runs(r, script)), None) or \
        next((r for r in steps if _runs(r, None)), None)


def _step_script(rec: Record, root: str, mounts: list[tuple[str, str]],
                 holds: set[str]) -> str | None:
    """The script the job step runs, repository-relative when it can be (a container
    path under a mount of the checkout is mapped back); None when it runs no ``.sh``."""
    if rec.tool in CONTAINER_TOOLS:
        step = _container_step(rec)
        ran = step.script if step is not None else None
    else:
        _, cmd = parse_slurm_args(args_of(rec))
        ran = next((c for c in cmd if c.endswith(".sh")), None)
    if ran is None:
        return None
    ran = ran.replace(root + "/", "")
    if ran.startswith("/"):  # a container path of the workspace mount
        ran = next((ran[len(c) + 1:] for h, c in mounts
                    if h in holds and ran.startswith(c + "/")), ran)
    return ran


def _script_env(lt: LaunchTrace, container: bool) -> dict[str, str]:
    """The job step's environment for the script stage: container paths under the
    workspace mount become relative paths below :data:`WS_TOKEN`."""
    senv: dict[str, str] = {}
    w = lt.workdir.rstrip("/")
    for k, v in lt.step_env.items():
        if container and w and (v == w or v.startswith(w + "/")):
            v = WS_TOKEN + v[len(w):]
        senv[k] = v.replace(HOST_WORKSPACE, WS_TOKEN)
    return senv


def explicit_env(lt: LaunchTrace) -> bool:
    """Does the job step get an explicit list of variables (a container runtime's
    ``--env``; ``srun --export`` without ``ALL``) rather than the launcher's whole
    environment?"""
    if lt.step_record is None:
        return False
    if lt.container is not None:
        return True
    specs = _opts(args_of(lt.step_record)).get("--export", [])
    return bool(specs) and "ALL" not in specs[-1].split(",")


def variables_read(root: Path, script: str, env: dict[str, str]) -> frozenset[str] | None:
    """The variables ``script`` (with the repository files it names: libraries it
    sources, helpers it runs) reads; None when it reads them dynamically (any may count)."""
    import os

    from inferencex_tools.io.layout import SKIP_DIRS
    from inferencex_tools.policy.effective import closure

    by_name: dict[str, list[str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        rel = os.path.relpath(dirpath, root)
        for n in filenames:
            by_name.setdefault(n, []).append(n if rel == "." else f"{rel}/{n}")

    def read(path: str) -> str | None:
        if os.path.basename(path) not in by_name or path not in by_name[os.path.basename(path)]:
            return None
        try:
            return (root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    c = closure(script, read, by_name, env)
    return None if c.everything else c.plain | frozenset(c.projections)
