"""The artifacts a benchmark job uploads, by the rules of the repository's own benchmark
template (pure: workflow texts and a matrix row in, artifact names out).

The template's ``actions/upload-artifact`` steps are evaluated for the row's job the way
the Actions runner evaluates them: the step's ``if:`` with the job's inputs and
environment (the status functions as :mod:`inferencex_tools.workflow.expr` reads them:
``always()``/``success()`` true, ``failure()``/``cancelled()`` false), its ``with.name``
with the runner's name left open (a sentinel), its ``with.path`` for what the artifact
holds.  So an eval-only job's artifacts are the eval's (``eval_server_logs_…``) and an
artifact both modes upload under one name (``agentic_<RESULT_FILENAME>``) is known to be
one.  A repository without such a template gets the reference templates' upload steps
(InferenceX ``benchmark-tmpl.yml`` / ``benchmark-multinode-tmpl.yml`` at 843c6254f),
evaluated the same way (:data:`BUILTIN`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inferencex_tools.errors import YamlError
from inferencex_tools.io.yamlio import load_safe
from inferencex_tools.workflow.expr import ExpressionError, evaluate, evaluate_value, to_string

UPLOAD_ACTION = "actions/upload-artifact"

# What the audit reads from an artifact, by the files its ``path:`` uploads: ``raw`` (a
# whole results tree: aiperf's export, logs), ``logs`` (server logs, a log tarball),
# ``other`` (results, metrics, eval scores: only evidence of which job ran).
_LOGS = re.compile(r"(?:^|/)[^/]*(?:\.log|\.out|\.tar\.gz|\.tgz)$")


@dataclass(frozen=True)
class UploadStep:
    """One upload step of a template: its condition, name and paths (unevaluated)."""

    name: Any
    condition: Any  # None: always uploads (``success()``)
    paths: tuple[str, ...]

    @property
    def role(self) -> str:
        kept = [p.strip() for p in self.paths if p.strip() and not p.strip().startswith("!")]
        if any(_LOGS.search(p) for p in kept):
            return "logs"
        if any(p.endswith("**") for p in kept):
            return "raw"
        return "other"


def _paths(v: Any) -> tuple[str, ...]:
    return tuple(str(v).splitlines()) if v is not None else ()


def _steps_of(doc: Mapping[Any, Any]) -> tuple[UploadStep, ...]:
    out: list[UploadStep] = []
    for job in (doc.get("jobs") or {}).values():
        for step in (job or {}).get("steps") or [] if isinstance(job, dict) else []:
            if not isinstance(step, dict) or not str(step.get("uses", "")).startswith(
                    UPLOAD_ACTION):
                continue
            w = step.get("with") if isinstance(step.get("with"), dict) else {}
            if w and w.get("name") is not None:
                out.append(UploadStep(w["name"], step.get("if"), _paths(w.get("path"))))
    return tuple(out)


def template_uploads(files: Mapping[str, bytes]) -> dict[str, tuple[UploadStep, ...]]:
    """The upload steps of every workflow file (path → steps; files without any are
    left out)."""
    out: dict[str, tuple[UploadStep, ...]] = {}
    for path, data in files.items():
        try:
            doc = load_safe(data, source=path)
        except YamlError:
            continue
        if isinstance(doc, dict):
            steps = _steps_of(doc)
            if steps:
                out[path] = steps
    return out


# The reference templates' upload steps (benchmark-tmpl.yml / benchmark-multinode-tmpl.yml
# of InferenceX at 843c6254f): names, conditions and paths, as facts.
_SINGLE = (
    ("bmk_${{ env.RESULT_FILENAME }}",
     "${{ !inputs.eval-only && inputs.scenario-type != 'agentic-coding' }}", "agg.json"),
    ("bmk_agentic_${{ env.RESULT_FILENAME }}",
     "${{ always() && inputs.scenario-type == 'agentic-coding' }}", "result.json"),
    ("agentic_${{ env.RESULT_FILENAME }}",
     "${{ always() && inputs.scenario-type == 'agentic-coding' }}", "results/**"),
    ("${{ inputs.eval-only && 'eval_server_logs_' || 'server_logs_' }}"
     "${{ env.RESULT_FILENAME }}", "always()", "server.log\nresults/*.log"),
    ("${{ inputs.eval-only && 'eval_gpu_metrics_' || 'gpu_metrics_' }}"
     "${{ env.RESULT_FILENAME }}", "always()", "gpu_metrics.csv"),
    ("power_audit_${{ env.RESULT_FILENAME }}",
     "${{ always() && !inputs.eval-only && inputs.scenario-type != 'agentic-coding' }}",
     "power_validation.json"),
    ("eval_${{ env.EXP_NAME }}_${{ env.RESULT_FILENAME }}",
     "${{ always() && (env.RUN_EVAL == 'true' || inputs.eval-only) }}", "results*.json"),
)
_MULTI = (
    ("bmk_${{ env.RESULT_FILENAME }}",
     "${{ !inputs.eval-only && inputs.scenario-type != 'agentic-coding' }}", "agg.json"),
    ("power_audit_${{ env.RESULT_FILENAME }}",
     "${{ always() && !inputs.eval-only && inputs.scenario-type != 'agentic-coding' }}",
     "power_validation.json"),
    ("multinode_server_logs_${{ env.RESULT_FILENAME }}", "always()",
     "multinode_server_logs.tar.gz"),
    ("bmk_agentic_${{ env.RESULT_FILENAME }}",
     "${{ !inputs.eval-only && inputs.scenario-type == 'agentic-coding' }}", "result.json"),
    ("agentic_${{ env.RESULT_FILENAME }}",
     "${{ always() && inputs.scenario-type == 'agentic-coding' }}", "LOGS/agentic/**"),
    ("eval_${{ env.RESULT_FILENAME }}",
     "${{ always() && (env.RUN_EVAL == 'true' || inputs.eval-only) }}", "results*.json"),
)
BUILTIN = {
    "single": tuple(UploadStep(n, c, _paths(p)) for n, c, p in _SINGLE),
    "multi": tuple(UploadStep(n, c, _paths(p)) for n, c, p in _MULTI),
}


def _condition(cond: Any, ctx: Mapping[str, Any]) -> bool:
    if cond is None:
        return True
    if isinstance(cond, bool):
        return cond
    text = str(cond).strip()
    if text.startswith("${{") and text.endswith("}}") and text.count("${{") == 1:
        text = text[3:-2]
    return bool(evaluate(text, ctx))


def evaluated(steps: tuple[UploadStep, ...], ctx: Mapping[str, Any]
              ) -> list[tuple[str, str]]:
    """(artifact name, role) of each step that uploads for the job of ``ctx``; a step
    whose condition or name cannot be evaluated is taken as uploading (a check that
    cannot be sure matches more, never less) when its name can be."""
    out: list[tuple[str, str]] = []
    for st in steps:
        try:
            name = to_string(evaluate_value(st.name, ctx))
        except ExpressionError:
            continue
        try:
            if not _condition(st.condition, ctx):
                continue
        except ExpressionError:
            pass
        out.append((name, st.role))
    return out


def context(inputs: Mapping[str, Any], env: Mapping[str, str], runner: str
            ) -> dict[str, Any]:
    """The expression context of a template's later steps for one job."""
    return {"inputs": dict(inputs), "env": dict(env), "vars": {}, "secrets": {},
            "matrix": {}, "steps": {}, "job": {"status": "success"},
            "runner": {"name": runner, "os": "Linux", "arch": "X64"},
            "github": {"run_attempt": 1, "event_name": "pull_request"}}


def builtin_context(matrix: Mapping[str, Any], env: Mapping[str, str], *, eval_only: bool,
                    result_filename: str, runner: str) -> dict[str, Any]:
    """The context the reference templates' steps see for a matrix row (the inputs
    run-sweep.yml passes: eval-only, run-eval, scenario-type)."""
    scen = str(matrix.get("scenario-type") or "fixed-seq-len")
    run_eval = bool(matrix.get("run-eval")) or eval_only
    inputs = {"eval-only": eval_only, "run-eval": run_eval, "scenario-type": scen}
    e = {**env, "RESULT_FILENAME": result_filename,
         "EXP_NAME": str(matrix.get("exp-name") or env.get("EXP_NAME") or ""),
         "RUN_EVAL": "true" if run_eval else "false"}
    return context(inputs, e, runner)
