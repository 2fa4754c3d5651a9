"""A benchmark job's environment, derived from the repository's own workflows.

Pure: workflow texts and a matrix row in, the environment out.  Nothing here is
hand-kept per variable; every value comes from

1. the *dispatch*: the caller job (``uses: ./.github/workflows/<template>``) whose
   ``strategy.matrix.config`` selects the row's bucket, and its ``with:`` mapping,
   evaluated with ``matrix.config = row`` (→ the template's inputs, typed and
   defaulted as the template declares them);
2. the template's top-level ``env:`` block, evaluated with those inputs;
3. the launch step's ``env:`` (the step whose ``run:`` starts ``runners/launch_…``),
   evaluated with ``runner.name`` = the runner node;
4. the launch step's ``run:`` script, evaluated up to the launcher command
   (:mod:`.shell`): its ``export``\\s (``RESULT_FILENAME``, ``GPU_COUNT``, the
   multi-node ``additional-settings``, ``IS_MULTINODE``) and the launcher it runs;
5. the variables every Actions job has (``GITHUB_WORKSPACE``, ``CI`` …,
   :data:`RUNNER_DEFAULTS`), with the local paths the caller chooses.

Secrets read as :data:`SECRET_PLACEHOLDER`; ``vars`` are unset.  An input or ``env`` value
whose lone ``${{ }}`` gives an object or an array is not printed as "Object": the runner
refuses such a template and the job never starts, so the value is left out and the
reason is in :attr:`JobEnvironment.refused`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from inferencex_tools.errors import YamlError
from inferencex_tools.io.yamlio import load_safe
from inferencex_tools.workflow.expr import (
    ExpressionError,
    NotScalar,
    evaluate_scalar,
    evaluate_value,
    to_string,
)
from inferencex_tools.workflow.shell import evaluate_run

SECRET_PLACEHOLDER = "ixtool-secret-placeholder"
WORKFLOW_DIR = ".github/workflows"
LAUNCH_MARKER = "runners/launch_"

# The matrix buckets the sweep produces (SWEEP.md: search-space-config).
BUCKETS = (
    "single_node.1k1k", "single_node.8k1k", "single_node.agentic",
    "multi_node.1k1k", "multi_node.8k1k", "multi_node.agentic",
    "evals", "agentic_evals", "multinode_evals", "multinode_agentic_evals",
)
_SENTINEL = "ixtool-bucket:"

# Variables the Actions runner gives every step (values are local stand-ins; paths
# are filled in from LocalPaths).
RUNNER_DEFAULTS: dict[str, str] = {
    "CI": "true",
    "GITHUB_ACTIONS": "true",
    "GITHUB_EVENT_NAME": "pull_request",
    "GITHUB_REPOSITORY": "local/repository",
    "GITHUB_RUN_ID": "1",
    "GITHUB_RUN_NUMBER": "1",
    "GITHUB_RUN_ATTEMPT": "1",
    "GITHUB_SHA": "0" * 40,
    "GITHUB_REF": "refs/pull/1/merge",
    "GITHUB_JOB": "benchmark",
    "RUNNER_OS": "Linux",
    "RUNNER_ARCH": "X64",
    "USER": "runner",
}


class _Placeholders(dict[str, Any]):
    """A context where every property exists (``secrets.*``)."""

    def __init__(self, value: str) -> None:
        super().__init__()
        self.value = value

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> Any:
        return self.value

    def get(self, key: str, default: Any = None) -> Any:
        return self.value


@dataclass(frozen=True)
class InputSpec:
    name: str
    type: str  # string | boolean | number
    default: Any = None
    required: bool = False


@dataclass(frozen=True)
class Template:
    """A reusable benchmark workflow (``on: workflow_call``) and its launch step."""

    path: str
    inputs: dict[str, InputSpec]
    env: dict[str, Any]
    step_name: str | None
    step_env: dict[str, Any]
    run: str


@dataclass(frozen=True)
class Dispatch:
    """A caller job that runs ``template`` for every row of ``bucket``."""

    workflow: str
    job: str
    template: str
    bucket: str
    with_: dict[str, Any]
    # the events that start the dispatching workflow (its ``on:`` keys)
    events: frozenset[str] = frozenset()

    @property
    def from_merge_ref(self) -> bool:
        """A pull request's run of this dispatch uses the PR merge ref's own workflows
        and checkout (GitHub runs ``pull_request`` workflows from the merge commit), not
        the base's."""
        return "pull_request" in self.events


@dataclass
class Workflows:
    """Everything the derivation needs from ``.github/workflows``."""

    templates: dict[str, Template] = field(default_factory=dict)
    dispatches: dict[str, Dispatch] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # "workflow:job" of a job that exports ``ixtool ci row``'s launcher environment and
    # then starts the launcher (ixtool's own sweep workflow): rows no template dispatches
    # get exactly that environment
    row_job: str | None = None

    def dispatch_for(self, bucket: str) -> Dispatch | None:
        return self.dispatches.get(bucket)


@dataclass
class LocalPaths:
    """Where the job's own paths live on this machine (all harmless, local)."""

    workspace: str  # GITHUB_WORKSPACE (the checkout)
    runner_root: str  # RUNNER_TEMP, GITHUB_ENV, HOME … live below it


@dataclass
class JobEnvironment:
    """The environment a launcher starts with, and where each value came from."""

    env: dict[str, str]
    origin: dict[str, str]  # variable → "benchmark-tmpl.yml env" etc.
    inputs: dict[str, Any]
    template: str
    dispatch: str  # "run-sweep.yml:sweep-agentic"
    launcher: str | None  # repository path of the launcher the run step starts
    launcher_argv: list[str] = field(default_factory=list)
    run_script: str = ""  # the launch step's run: script with expressions substituted
    notes: list[str] = field(default_factory=list)
    # why the runner would refuse to start this job (a value its template takes as a
    # scalar is an object or an array); the values concerned are left out of ``env``
    refused: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- loading

def _on(doc: dict[Any, Any]) -> dict[str, Any]:
    on = doc.get("on", doc.get(True))
    return on if isinstance(on, dict) else {}


def _events(doc: dict[Any, Any]) -> frozenset[str]:
    """The events of a workflow's ``on:`` in any of its three forms (a name, a list of
    names, a mapping)."""
    on = doc.get("on", doc.get(True))
    if isinstance(on, str):
        return frozenset((on,))
    if isinstance(on, list | dict):
        return frozenset(str(e) for e in on)
    return frozenset()


def _template(path: str, doc: dict[str, Any]) -> Template | None:
    call = _on(doc).get("workflow_call")
    if not isinstance(call, dict):
        return None
    inputs: dict[str, InputSpec] = {}
    for name, spec in (call.get("inputs") or {}).items():
        spec = spec if isinstance(spec, dict) else {}
        inputs[str(name)] = InputSpec(str(name), str(spec.get("type", "string")),
                                      spec.get("default"), bool(spec.get("required", False)))
    env = doc.get("env") if isinstance(doc.get("env"), dict) else {}
    for job in (doc.get("jobs") or {}).values():
        for step in (job or {}).get("steps") or []:
            run = step.get("run") if isinstance(step, dict) else None
            if isinstance(run, str) and LAUNCH_MARKER in run:
                senv = step.get("env") if isinstance(step.get("env"), dict) else {}
                return Template(path, inputs, dict(env or {}), step.get("name"), dict(senv),
                                run)
    return None


def _row_job(path: str, doc: dict[str, Any]) -> str | None:
    """``path:job`` of the first job with a step running ``ixtool ci row`` (the action's
    ``command: ci row``, or the command line) followed by a step that starts a launcher."""
    for name, job in (doc.get("jobs") or {}).items():
        steps = job.get("steps") if isinstance(job, dict) else None
        row_step = False
        for step in steps if isinstance(steps, list) else []:
            if not isinstance(step, dict):
                continue
            w = step.get("with")
            run = str(step.get("run") or "")
            command = str(w.get("command", "")) if isinstance(w, dict) else ""
            if command.split() == ["ci", "row"] or "ixtool ci row" in run:
                row_step = True
            elif row_step and LAUNCH_MARKER in run:
                return f"{path}:{name}"
    return None


def _bucket_tree() -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for b in BUCKETS:
        head, _, tail = b.partition(".")
        if tail:
            tree.setdefault(head, {})[tail] = _SENTINEL + b
        else:
            tree[head] = _SENTINEL + b
    return tree


class _Outputs(dict[str, Any]):
    """``needs.<job>`` for any job: result unknown, every output the bucket tree."""

    def __init__(self, blob: str) -> None:
        super().__init__()
        self.blob = blob

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> Any:
        return {"result": None, "outputs": _Placeholders(self.blob)}

    def get(self, key: str, default: Any = None) -> Any:
        return self[key]


def _bucket_of_job(job: dict[str, Any]) -> str | None:
    matrix = ((job.get("strategy") or {}).get("matrix") or {})
    expr = matrix.get("config") if isinstance(matrix, dict) else None
    if not isinstance(expr, str):
        return None
    ctx = {"needs": _Outputs(json.dumps(_bucket_tree())), "github": {}, "inputs": {},
           "vars": {}}
    try:
        v = evaluate_value(expr, ctx)
    except ExpressionError:
        return None
    if isinstance(v, str) and v.startswith(_SENTINEL):
        return v[len(_SENTINEL):]
    return None


def load_workflows(files: Mapping[str, bytes]) -> Workflows:
    """Read the workflow files (path → bytes, e.g. every ``.github/workflows/*.yml``)."""
    wf = Workflows()
    docs: dict[str, dict[str, Any]] = {}
    for path in sorted(files):
        if not path.endswith((".yml", ".yaml")):
            continue
        try:
            doc = load_safe(files[path], source=path)
        except YamlError as exc:
            wf.notes.append(f"{path}: not readable ({exc.detail})")
            continue
        if isinstance(doc, dict):
            docs[path] = doc
    for path, doc in docs.items():
        t = _template(path, doc)
        if t is not None:
            wf.templates[path] = t
        wf.row_job = wf.row_job or _row_job(path, doc)
    candidates: list[tuple[int, str, Dispatch]] = []
    for path, doc in docs.items():
        found: list[Dispatch] = []
        for name, job in (doc.get("jobs") or {}).items():
            if not isinstance(job, dict) or not isinstance(job.get("uses"), str):
                continue
            target = job["uses"].split("@", 1)[0].removeprefix("./")
            if target not in wf.templates:
                continue
            bucket = _bucket_of_job(job)
            if bucket is None:
                continue
            w = job.get("with") if isinstance(job.get("with"), dict) else {}
            found.append(Dispatch(path, str(name), target, bucket, dict(w or {}),
                                  _events(doc)))
        for d in found:
            candidates.append((-len(found), path, d))
    for _, _, d in sorted(candidates, key=lambda c: (c[0], c[1])):
        wf.dispatches.setdefault(d.bucket, d)
    return wf


# --------------------------------------------------------------------------- derivation

def bucket_of(row: Mapping[str, Any]) -> str:
    """The search-space bucket a matrix row is dispatched from."""
    agentic = row.get("scenario-type") == "agentic-coding"
    multi = row.get("prefill") is not None
    if row.get("eval-only"):
        if multi:
            return "multinode_agentic_evals" if agentic else "multinode_evals"
        return "agentic_evals" if agentic else "evals"
    seqs: dict[tuple[Any, Any], str] = {(1024, 1024): "1k1k", (8192, 1024): "8k1k"}
    pair = (row.get("isl"), row.get("osl"))
    seq = "agentic" if agentic else seqs.get(pair, f"{pair[0]}x{pair[1]}")
    return f"{'multi_node' if multi else 'single_node'}.{seq}"


def _typed(spec: InputSpec | None, value: Any) -> Any:
    kind = spec.type if spec else "string"
    if kind == "boolean":
        if isinstance(value, str):
            return value.strip().lower() == "true"
        return bool(value)
    if kind == "number":
        try:
            return float(value)
        except (TypeError, ValueError):
            return value
    return to_string(value)


def _inputs(t: Template, d: Dispatch, row: Mapping[str, Any],
            notes: list[str], refused: list[str]) -> dict[str, Any]:
    ctx = {"matrix": {"config": dict(row)}, "github": {"event": {"pull_request":
           {"labels": []}}, "run_attempt": 1}, "inputs": {}, "vars": {},
           "secrets": _Placeholders(SECRET_PLACEHOLDER), "needs": {}}
    given: dict[str, Any] = {}
    for name, raw in d.with_.items():
        try:
            given[str(name)] = evaluate_scalar(raw, ctx)
        except NotScalar as exc:
            refused.append(f"{d.workflow}:{d.job} with.{name}: {exc}")
        except ExpressionError as exc:
            notes.append(f"{d.workflow}:{d.job} with.{name}: {exc}")
    out: dict[str, Any] = {}
    for name, spec in t.inputs.items():
        v = given.get(name)
        if v is None:
            v = spec.default
        out[name] = _typed(spec, v) if v is not None else _typed(spec, "")
    for name, v in given.items():
        out.setdefault(name, _typed(None, v))
    return out


def _eval_block(block: Mapping[str, Any], ctx: Mapping[str, Any], where: str,
                notes: list[str], refused: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, raw in block.items():
        try:
            out[str(k)] = to_string(evaluate_scalar(raw, ctx))
        except NotScalar as exc:
            refused.append(f"{where} {k}: {exc}")
        except ExpressionError as exc:
            notes.append(f"{where} {k}: {exc}")
    return out


def runner_defaults(paths: LocalPaths, node: str) -> dict[str, str]:
    r = paths.runner_root.rstrip("/")
    return {
        **RUNNER_DEFAULTS,
        "RUNNER_NAME": node,
        "GITHUB_WORKSPACE": paths.workspace,
        "GITHUB_ENV": f"{r}/github_env",
        "GITHUB_OUTPUT": f"{r}/github_output",
        "GITHUB_PATH": f"{r}/github_path",
        "GITHUB_STATE": f"{r}/github_state",
        "GITHUB_STEP_SUMMARY": f"{r}/step_summary",
        "GITHUB_EVENT_PATH": f"{r}/event.json",
        "RUNNER_TEMP": f"{r}/temp",
        "RUNNER_TOOL_CACHE": f"{r}/toolcache",
        "HOME": f"{r}/home",
    }


def job_environment(wf: Workflows, row: Mapping[str, Any], *, node: str,
                    paths: LocalPaths, bucket: str | None = None) -> JobEnvironment | None:
    """The environment the launcher of ``row`` starts with on runner ``node``.

    ``None`` when no workflow dispatches the row's bucket (see :attr:`Workflows.notes`).
    """
    bucket = bucket or bucket_of(row)
    d = wf.dispatch_for(bucket)
    if d is None:
        return None
    t = wf.templates[d.template]
    notes: list[str] = []
    refused: list[str] = []
    inputs = _inputs(t, d, row, notes, refused)
    base = {"inputs": inputs, "secrets": _Placeholders(SECRET_PLACEHOLDER), "vars": {},
            "github": {"run_attempt": 1, "sha": RUNNER_DEFAULTS["GITHUB_SHA"],
                       "workspace": paths.workspace, "event_name": "pull_request"},
            "runner": {"name": node, "os": "Linux", "arch": "X64",
                       "temp": runner_defaults(paths, node)["RUNNER_TEMP"]}}
    name = t.path.rsplit("/", 1)[-1]
    wenv = _eval_block(t.env, base, f"{name} env", notes, refused)
    senv = _eval_block(t.step_env, {**base, "env": wenv}, f"{name} step env", notes,
                       refused)
    env = runner_defaults(paths, node)
    origin = dict.fromkeys(env, "runner")
    for k, v in wenv.items():
        env[k], origin[k] = v, f"{name} env"
    for k, v in senv.items():
        env[k], origin[k] = v, f"{name} step '{t.step_name or 'launch'}' env"
    try:
        run_script = evaluate_value(t.run, {**base, "env": {**wenv, **senv}})
    except ExpressionError as exc:
        notes.append(f"{name} run: {exc}")
        run_script = ""
    run = evaluate_run(to_string(run_script), env)
    notes.extend(f"{name} run: {n}" for n in run.notes)
    for k, v in run.exports.items():
        env[k], origin[k] = v, f"{name} run: export"
    launcher = None
    if run.command:
        script = run.command[1] if run.command[0].rsplit("/", 1)[-1] in ("bash", "sh") \
            else run.command[0]
        launcher = script.removeprefix("./")
    return JobEnvironment(env, origin, inputs, t.path, f"{d.workflow}:{d.job}", launcher,
                          run.command or [], to_string(run_script), notes, refused)


def workflow_files(paths: Iterable[tuple[str, bytes]]) -> dict[str, bytes]:
    """Only the workflow files (``.github/workflows/*.yml|yaml``) of a path list."""
    return {p: b for p, b in paths
            if p.startswith(WORKFLOW_DIR + "/") and p.endswith((".yml", ".yaml"))}
